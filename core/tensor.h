#pragma once
// Tensor: a handle to shared Storage plus shape, strides, offset and dtype.
//
// Copying a Tensor copies the handle, not the data (as in libtorch). Views (reshape, permute,
// narrow, select, expand, ...) share the storage of their base and cost no copy.
//
// The class is declared here, in core/, because it is the data type everything else works on.
// The members that compute something (math, views, autograd) are defined in autograd/, next
// to their backward passes: core/ itself knows only how tensors are laid out in memory.

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "base/device.h"
#include "base/dtype.h"
#include "base/shape.h"
#include "core/storage.h"

namespace normgrad {

namespace autograd {
struct AutogradMeta;
class Node;
}  // namespace autograd

struct TensorImpl {
  std::shared_ptr<Storage> storage;
  Shape shape;
  Strides strides;
  std::int64_t offset = 0;  // in elements
  DType dtype = DType::Float32;
  std::shared_ptr<autograd::AutogradMeta> autograd;  // null until autograd needs it
};

class Tensor {
 public:
  Tensor() = default;  // an undefined tensor: defined() is false
  explicit Tensor(std::shared_ptr<TensorImpl> impl) : impl_(std::move(impl)) {}

  // ---- what it is -------------------------------------------------------------------------
  bool defined() const { return impl_ != nullptr; }
  const Shape& shape() const;
  std::int64_t size(std::int64_t dim) const;
  std::int64_t dim() const;
  std::int64_t numel() const;
  const Strides& strides() const;
  std::int64_t offset() const;
  DType dtype() const;
  Device device() const;
  bool is_contiguous() const;
  const std::shared_ptr<Storage>& storage() const;
  TensorImpl* impl() const { return impl_.get(); }
  const std::shared_ptr<TensorImpl>& shared_impl() const { return impl_; }
  bool is_same(const Tensor& other) const { return impl_ == other.impl_; }

  // ---- values -----------------------------------------------------------------------------
  // Pointer to the first element of a CPU tensor; T must match dtype().
  template <typename T> T* data_ptr() const;
  double item() const;  // the value of a one-element tensor, on any device
  template <typename T> T item() const { return static_cast<T>(item()); }
  template <typename T> std::vector<T> to_vector() const;  // row-major copy, converted to T
  std::string str() const;                                  // what operator<< prints

  // ---- copies and conversions (differentiable) --------------------------------------------
  Tensor contiguous() const;  // returns *this when already contiguous
  Tensor clone() const;
  Tensor to(DType dtype) const;
  Tensor to(Device device) const;
  Tensor detach() const;  // same storage, no autograd history

  // ---- views (differentiable, no copies) --------------------------------------------------
  Tensor view(const Shape& shape) const;     // needs compatible strides; -1 infers one size
  Tensor reshape(const Shape& shape) const;  // a view when possible, else a copy
  Tensor flatten(std::int64_t start_dim = 0, std::int64_t end_dim = -1) const;
  Tensor permute(const std::vector<std::int64_t>& dims) const;
  Tensor transpose(std::int64_t dim0, std::int64_t dim1) const;
  Tensor t() const;  // transpose of a 2-d tensor
  Tensor narrow(std::int64_t dim, std::int64_t start, std::int64_t length) const;
  Tensor slice(std::int64_t dim, std::int64_t start, std::int64_t end,
               std::int64_t step = 1) const;
  Tensor select(std::int64_t dim, std::int64_t index) const;
  Tensor expand(const Shape& shape) const;  // -1 keeps a size; new dims go in front
  Tensor unsqueeze(std::int64_t dim) const;
  Tensor squeeze() const;
  Tensor squeeze(std::int64_t dim) const;

  // ---- math (differentiable; see autograd/ops.h for the full list as free functions) ------
  Tensor sum() const;
  Tensor sum(const std::vector<std::int64_t>& dims, bool keepdim = false) const;
  Tensor mean() const;
  Tensor mean(const std::vector<std::int64_t>& dims, bool keepdim = false) const;
  Tensor max() const;
  Tensor max(std::int64_t dim, bool keepdim = false) const;
  Tensor argmax(std::int64_t dim, bool keepdim = false) const;
  Tensor var(const std::vector<std::int64_t>& dims = {}, bool keepdim = false,
             bool unbiased = false) const;
  Tensor exp() const;
  Tensor log() const;
  Tensor sqrt() const;
  Tensor rsqrt() const;
  Tensor abs() const;
  Tensor tanh() const;
  Tensor sigmoid() const;
  Tensor relu() const;
  Tensor pow(double exponent) const;
  Tensor square() const;
  Tensor matmul(const Tensor& other) const;
  Tensor softmax(std::int64_t dim) const;
  Tensor log_softmax(std::int64_t dim) const;

  // ---- in-place (not differentiable; they bump the storage version) -----------------------
  Tensor& fill_(double value);
  Tensor& zero_();
  // src broadcasts to this shape, converts dtype, and may be on another device.
  Tensor& copy_(const Tensor& src);
  Tensor& add_(const Tensor& other, double alpha = 1.0);  // this += alpha * other
  Tensor& add_(double value);
  Tensor& sub_(const Tensor& other);
  Tensor& mul_(const Tensor& other);
  Tensor& mul_(double value);
  Tensor& div_(const Tensor& other);
  Tensor& div_(double value);

  // ---- autograd ---------------------------------------------------------------------------
  bool requires_grad() const;
  // Marks a leaf as a variable to differentiate with respect to. Returns *this.
  Tensor& set_requires_grad(bool requires_grad = true);
  // Alias in the libtorch spirit: Tensor x = randn({3}).requires_grad_();
  Tensor& requires_grad_(bool requires_grad = true) { return set_requires_grad(requires_grad); }
  Tensor grad() const;  // undefined until a backward pass reaches this leaf
  void set_grad(const Tensor& grad);
  void zero_grad();  // drops the accumulated gradient
  bool is_leaf() const;
  std::shared_ptr<autograd::Node> grad_fn() const;
  // Runs reverse-mode differentiation from this tensor. A tensor with more than one element
  // needs `gradient` (same shape): the vector in the vector-Jacobian product.
  void backward(const Tensor& gradient = Tensor(), bool retain_graph = false) const;

 private:
  std::shared_ptr<TensorImpl> impl_;
};

std::ostream& operator<<(std::ostream& out, const Tensor& tensor);

// ---- factories ----------------------------------------------------------------------------
struct TensorOptions {
  DType dtype = DType::Float32;
  Device device = Device::cpu();
  bool requires_grad = false;
};

class Generator;

Tensor empty(const Shape& shape, TensorOptions options = {});  // uninitialised
Tensor zeros(const Shape& shape, TensorOptions options = {});
Tensor ones(const Shape& shape, TensorOptions options = {});
Tensor full(const Shape& shape, double value, TensorOptions options = {});
Tensor zeros_like(const Tensor& like);
Tensor ones_like(const Tensor& like);
Tensor empty_like(const Tensor& like);  // same shape, dtype and device; contiguous
// Values start, start + step, ... below end (above end for a negative step).
Tensor arange(double start, double end, double step = 1.0, TensorOptions options = {});
Tensor arange(double end, TensorOptions options = {});
// A 0-d tensor holding one value.
Tensor scalar_tensor(double value, TensorOptions options = {});

// From host values; numel(shape) must equal values.size(). dtype follows T unless options
// ask for another (values are converted).
template <typename T>
Tensor from_vector(const std::vector<T>& values, const Shape& shape);
Tensor tensor(std::initializer_list<double> values, TensorOptions options = {});
Tensor tensor(std::initializer_list<std::initializer_list<double>> rows,
              TensorOptions options = {});

// Random tensors from a seeded Generator (or the default one). The same seed gives the same
// numbers on any thread count.
Tensor rand(const Shape& shape, Generator& generator, TensorOptions options = {});
Tensor randn(const Shape& shape, Generator& generator, TensorOptions options = {});
// Integers in [low, high); int64 unless options say otherwise.
Tensor randint(std::int64_t low, std::int64_t high, const Shape& shape, Generator& generator,
               TensorOptions options = {.dtype = DType::Int64});
Tensor rand(const Shape& shape, TensorOptions options = {});
Tensor randn(const Shape& shape, TensorOptions options = {});
Tensor randint(std::int64_t low, std::int64_t high, const Shape& shape,
               TensorOptions options = {.dtype = DType::Int64});

}  // namespace normgrad
