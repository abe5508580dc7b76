// Copies and conversions: contiguous, clone, to(dtype), to(device). Each gradient is the
// same conversion run backwards.

#include "autograd/ops.h"
#include "autograd/primitives.h"
#include "autograd/record.h"
#include "base/error.h"
#include "core/tensor_internal.h"

namespace normgrad {

using autograd::Grads;
using autograd::needs_grad;
using autograd::record;
using autograd::SavedTensors;
using autograd::primitive::check_defined;

namespace {
Tensor identity_backward_copy(const Tensor& x, Tensor y, const char* name) {
  if (needs_grad(x))
    record(name, y, {x}, {}, [](const Tensor& dy, const SavedTensors&) { return Grads{dy}; });
  return y;
}

// A contiguous copy of x whose gradient passes straight through; `op` names the caller in errors.
Tensor copy_of(const Tensor& x, const char* op) {
  Tensor y = detail::make_tensor(x.shape(), x.dtype(), x.device(), op);
  detail::copy_values(y, x);
  return identity_backward_copy(x, y, "CloneBackward");
}
}  // namespace

Tensor Tensor::contiguous() const {
  check_defined(*this, "contiguous");
  if (is_contiguous()) return *this;
  return copy_of(*this, "contiguous");
}

Tensor Tensor::clone() const {
  check_defined(*this, "clone");
  return copy_of(*this, "clone");
}

Tensor Tensor::to(DType target) const {
  check_defined(*this, "to");
  if (target == dtype()) return *this;
  Tensor y = detail::make_tensor(shape(), target, device(), "to");
  detail::copy_values(y, *this);
  if (needs_grad(*this) && is_floating(target))  // the gradient converts back
    record("ToDTypeBackward", y, {*this}, {},
           [source = dtype()](const Tensor& dy, const SavedTensors&) {
             return Grads{dy.to(source)};
           });
  return y;
}

Tensor Tensor::to(Device target) const {
  check_defined(*this, "to");
  if (target == device()) return *this;
  // Stage through contiguous host memory: device -> host -> device.
  Tensor source = contiguous();
  Tensor host = source;
  if (!source.device().is_cpu()) {
    host = detail::make_tensor(shape(), dtype(), Device::cpu());
    detail::backend_of(source).copy_to_host(
        host.storage()->data(), detail::ref(source).data,
        static_cast<std::size_t>(numel()) * element_size(dtype()));
  }
  Tensor y = host;
  if (!target.is_cpu()) {
    y = detail::make_tensor(shape(), dtype(), target);
    detail::backend_of(y).copy_from_host(detail::ref(y).data, detail::ref(host).data,
                                         static_cast<std::size_t>(numel()) * element_size(dtype()));
  }
  if (needs_grad(*this))
    record("ToDeviceBackward", y, {*this}, {},
           [source_device = device()](const Tensor& dy, const SavedTensors&) {
             return Grads{dy.to(source_device)};
           });
  return y;
}

}  // namespace normgrad
