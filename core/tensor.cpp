// Tensor's accessors and the core helpers on raw tensors. The differentiable members live in
// autograd/.

#include "core/tensor.h"

#include <cstring>

#include "backends/dispatch.h"
#include "base/checked.h"
#include "base/error.h"
#include "core/tensor_internal.h"

namespace normgrad {

namespace {

void check_defined(const TensorImpl* impl, const char* what) {
  NG_CHECK(impl != nullptr, what, "the tensor is undefined (default-constructed)");
}

// Row-major copy of any tensor into contiguous host memory of the same dtype.
Tensor to_host_contiguous(const Tensor& tensor) {
  Tensor dense = tensor;
  if (!tensor.is_contiguous()) {
    dense = detail::make_tensor(tensor.shape(), tensor.dtype(), tensor.device());
    detail::copy_values(dense, tensor);
  }
  if (dense.device().is_cpu()) return dense;
  Tensor host = detail::make_tensor(dense.shape(), dense.dtype(), Device::cpu());
  detail::backend_of(dense).copy_to_host(
      host.storage()->data(),
      static_cast<const char*>(dense.storage()->data()) + dense.offset() * element_size(dense.dtype()),
      static_cast<std::size_t>(dense.numel()) * element_size(dense.dtype()));
  return host;
}

}  // namespace

const Shape& Tensor::shape() const {
  check_defined(impl_.get(), "shape");
  return impl_->shape;
}

std::int64_t Tensor::size(std::int64_t dim) const {
  return shape()[wrap_dim(dim, this->dim(), "size")];
}

std::int64_t Tensor::dim() const { return static_cast<std::int64_t>(shape().size()); }

std::int64_t Tensor::numel() const { return normgrad::numel(shape()); }

const Strides& Tensor::strides() const {
  check_defined(impl_.get(), "strides");
  return impl_->strides;
}

std::int64_t Tensor::offset() const {
  check_defined(impl_.get(), "offset");
  return impl_->offset;
}

DType Tensor::dtype() const {
  check_defined(impl_.get(), "dtype");
  return impl_->dtype;
}

Device Tensor::device() const {
  check_defined(impl_.get(), "device");
  return impl_->storage->device();
}

const std::shared_ptr<Storage>& Tensor::storage() const {
  check_defined(impl_.get(), "storage");
  return impl_->storage;
}

bool Tensor::is_contiguous() const {
  const Shape& sizes = shape();
  std::int64_t expected = 1;
  for (std::size_t i = sizes.size(); i-- > 0;) {
    if (sizes[i] == 1) continue;
    if (impl_->strides[i] != expected) return false;
    expected *= sizes[i];
  }
  return true;
}

template <typename T>
T* Tensor::data_ptr() const {
  check_defined(impl_.get(), "data_ptr");
  NG_CHECK(dtype() == dtype_of_v<T>, "data_ptr", "asked for ", dtype_of_v<T>,
           " elements but the tensor holds ", dtype());
  NG_CHECK(device().is_cpu(), "data_ptr", "the tensor is on ", device(),
           "; move it with .to(Device::cpu()) first");
  return static_cast<T*>(impl_->storage->data()) + impl_->offset;
}
template float* Tensor::data_ptr<float>() const;
template double* Tensor::data_ptr<double>() const;
template std::int64_t* Tensor::data_ptr<std::int64_t>() const;
template bfloat16* Tensor::data_ptr<bfloat16>() const;

double Tensor::item() const {
  check_defined(impl_.get(), "item");
  NG_CHECK(numel() == 1, "item", "needs a tensor with one element, got shape ", shape());
  return to_vector<double>()[0];
}

template <typename T>
std::vector<T> Tensor::to_vector() const {
  check_defined(impl_.get(), "to_vector");
  Tensor host = to_host_contiguous(*this);
  std::vector<T> values(static_cast<std::size_t>(host.numel()));
  if (host.dtype() == dtype_of_v<T>) {
    if (!values.empty())
      std::memcpy(values.data(), host.data_ptr<T>(), values.size() * sizeof(T));
    return values;
  }
  if (values.empty()) return values;  // memcpy may not be handed the null data of an empty vector
  Tensor converted = from_vector<T>(std::vector<T>(values.size()), host.shape());
  detail::copy_values(converted, host);
  std::memcpy(values.data(), converted.data_ptr<T>(), values.size() * sizeof(T));
  return values;
}
template std::vector<float> Tensor::to_vector<float>() const;
template std::vector<double> Tensor::to_vector<double>() const;
template std::vector<std::int64_t> Tensor::to_vector<std::int64_t>() const;
template std::vector<bfloat16> Tensor::to_vector<bfloat16>() const;

namespace detail {

Tensor make_tensor(const Shape& shape, DType dtype, Device device, const char* op) {
  const std::size_t bytes = checked_nbytes(shape, element_size(dtype), op);
  auto impl = std::make_shared<TensorImpl>();
  try {
    impl->storage = std::make_shared<Storage>(bytes, device);
  } catch (const std::bad_alloc&) {
    NG_CHECK(false, op, "out of memory allocating ", bytes, " bytes for shape ", shape, " of ",
             dtype, " on ", device);
  } catch (const Error& error) {  // the backend's own out-of-memory report, with its figures
    NG_CHECK(false, op, "cannot allocate ", bytes, " bytes for shape ", shape, " of ", dtype,
             " on ", device, ": ", error.what());
  }
  impl->shape = shape;
  impl->strides = contiguous_strides(shape);
  impl->dtype = dtype;
  return Tensor(std::move(impl));
}

Tensor make_view(const Tensor& base, Shape shape, Strides strides, std::int64_t offset) {
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = base.storage();
  impl->shape = std::move(shape);
  impl->strides = std::move(strides);
  impl->offset = offset;
  impl->dtype = base.dtype();
  return Tensor(std::move(impl));
}

backend::Backend& backend_of(const Tensor& tensor) {
  return backend::backend_for(tensor.device());
}

backend::TensorRef ref(const Tensor& tensor) {
  backend::TensorRef view;
  view.data = static_cast<char*>(tensor.storage()->data()) +
              tensor.offset() * static_cast<std::int64_t>(element_size(tensor.dtype()));
  view.dtype = tensor.dtype();
  view.shape = tensor.shape();
  view.strides = tensor.strides();
  return view;
}

const backend::TensorRef* optional_ref(const Tensor& tensor, backend::TensorRef& storage) {
  if (!tensor.defined()) return nullptr;
  storage = ref(tensor);
  return &storage;
}

backend::TensorRef broadcast_ref(const Tensor& tensor, const Shape& shape) {
  backend::TensorRef view = ref(tensor);
  const std::size_t lead = shape.size() - view.shape.size();
  Strides strides(shape.size(), 0);
  for (std::size_t i = 0; i < view.shape.size(); ++i)
    strides[lead + i] = view.shape[i] == 1 ? 0 : view.strides[i];
  view.shape = shape;
  view.strides = std::move(strides);
  return view;
}

void copy_values(const Tensor& dst, const Tensor& src) {
  if (dst.numel() == 0) return;
  backend_of(dst).copy(ref(dst), ref(src));
}

}  // namespace detail

Tensor Tensor::detach() const {
  check_defined(impl_.get(), "detach");
  return detail::make_view(*this, impl_->shape, impl_->strides, impl_->offset);
}

}  // namespace normgrad
