// AutogradMeta and the autograd members of Tensor.

#include "autograd/autograd_meta.h"

#include "autograd/engine.h"
#include "autograd/grad_mode.h"
#include "autograd/primitives.h"
#include "base/error.h"

namespace normgrad {
namespace autograd {

AutogradMeta& meta_of(const Tensor& tensor) {
  TensorImpl* impl = tensor.impl();
  if (!impl->autograd) impl->autograd = std::make_shared<AutogradMeta>();
  return *impl->autograd;
}

std::shared_ptr<Node> gradient_edge(const Tensor& tensor) {
  TensorImpl* impl = tensor.impl();
  if (!impl || !impl->autograd) return nullptr;
  AutogradMeta& meta = *impl->autograd;
  if (meta.grad_fn) return meta.grad_fn;
  if (!meta.requires_grad) return nullptr;
  std::shared_ptr<AccumulateGrad> accumulator = meta.grad_accumulator.lock();
  if (!accumulator) {
    // The accumulator holds the leaf; the leaf holds the accumulator only weakly.
    accumulator = std::make_shared<AccumulateGrad>(tensor.shared_impl());
    meta.grad_accumulator = accumulator;
  }
  return accumulator;
}

}  // namespace autograd

using autograd::primitive::check_defined;

bool Tensor::requires_grad() const {
  return impl_ && impl_->autograd && impl_->autograd->requires_grad;
}

Tensor& Tensor::set_requires_grad(bool requires_grad) {
  check_defined(*this, "set_requires_grad");
  NG_CHECK(is_leaf(), "set_requires_grad",
           "only leaf tensors can change requires_grad; this one was computed by ",
           grad_fn()->name(), " (use detach() to get a leaf)");
  NG_CHECK(!requires_grad || is_floating(dtype()), "set_requires_grad",
           "only floating-point tensors can require gradients, got ", dtype());
  autograd::meta_of(*this).requires_grad = requires_grad;
  return *this;
}

Tensor Tensor::grad() const {
  check_defined(*this, "grad");
  return impl_->autograd ? impl_->autograd->grad : Tensor();
}

void Tensor::set_grad(const Tensor& grad) {
  check_defined(*this, "set_grad");
  if (grad.defined()) {
    NG_CHECK(grad.shape() == shape() && grad.dtype() == dtype() && grad.device() == device(),
             "set_grad", "the gradient must match the tensor: got ", grad.shape(), " ",
             grad.dtype(), " on ", grad.device(), " for ", shape(), " ", dtype(), " on ",
             device());
  }
  autograd::meta_of(*this).grad = grad;
}

void Tensor::zero_grad() {
  check_defined(*this, "zero_grad");
  if (impl_->autograd) impl_->autograd->grad = Tensor();
}

bool Tensor::is_leaf() const {
  check_defined(*this, "is_leaf");
  return !impl_->autograd || !impl_->autograd->grad_fn;
}

std::shared_ptr<autograd::Node> Tensor::grad_fn() const {
  check_defined(*this, "grad_fn");
  return impl_->autograd ? impl_->autograd->grad_fn : nullptr;
}

void Tensor::backward(const Tensor& gradient, bool retain_graph) const {
  check_defined(*this, "backward");
  autograd::backward(*this, gradient, retain_graph);
}

}  // namespace normgrad
