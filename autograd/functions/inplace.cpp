// In-place updates: fill_, zero_, copy_, add_, sub_, mul_, div_. They are not recorded by
// autograd, so they are refused on tensors that take part in a graph while grad mode is on
// (use them under NoGradGuard, as optimizers do). Each bumps the storage version, which is
// how a backward pass notices that a tensor it saved was changed afterwards.

#include "autograd/grad_mode.h"
#include "autograd/ops.h"
#include "autograd/primitives.h"
#include "base/error.h"
#include "core/tensor_internal.h"

namespace normgrad {

namespace {

void check_writable(const Tensor& self, const Tensor* other, const char* name) {
  autograd::primitive::check_defined(self, name);
  NG_CHECK(!GradMode::is_enabled() || !(self.requires_grad() || (other && other->requires_grad())),
           name, "in-place operations are not recorded by autograd, and ",
           self.requires_grad() ? "this tensor" : "the other operand",
           " requires grad; use the out-of-place op, or do the update under NoGradGuard");
  for (std::size_t d = 0; d < self.shape().size(); ++d)
    NG_CHECK(self.strides()[d] != 0 || self.shape()[d] <= 1, name,
             "cannot write in place into an expanded tensor (shape ", self.shape(), ", strides ",
             self.strides(), "): several elements share one memory location");
}

// `other`, checked against self, and copied first if it shares memory with self in a
// different layout (reading it while writing self would see half-updated values).
Tensor operand(const Tensor& self, const Tensor& other, const char* name) {
  autograd::primitive::check_defined(other, name);
  autograd::primitive::check_same_device(self, other, name);
  NG_CHECK(broadcast_shapes(other.shape(), self.shape(), name) == self.shape(), name,
           "operand of shape ", other.shape(), " does not broadcast to the target's shape ",
           self.shape());
  const bool aliased = other.storage() == self.storage() &&
                       !(other.shape() == self.shape() && other.strides() == self.strides() &&
                         other.offset() == self.offset());
  if (!aliased) return other;
  Tensor copy = detail::make_tensor(other.shape(), other.dtype(), other.device());
  detail::copy_values(copy, other);
  return copy;
}

Tensor& binary_inplace(Tensor& self, backend::BinaryOp op, const Tensor& other, const char* name) {
  check_writable(self, &other, name);
  autograd::primitive::check_same_dtype(self, other, name);
  if (self.numel() > 0) {
    const Tensor source = operand(self, other, name);
    detail::backend_of(self).binary(op, detail::ref(self), detail::ref(self),
                                    detail::broadcast_ref(source, self.shape()), 0);
  }
  self.storage()->bump_version();
  return self;
}

Tensor& unary_inplace(Tensor& self, backend::UnaryOp op, double alpha, const char* name) {
  check_writable(self, nullptr, name);
  if (self.numel() > 0)
    detail::backend_of(self).unary(op, detail::ref(self), detail::ref(self), alpha, 0);
  self.storage()->bump_version();
  return self;
}

}  // namespace

Tensor& Tensor::fill_(double value) {
  check_writable(*this, nullptr, "fill_");
  if (numel() > 0) detail::backend_of(*this).fill(detail::ref(*this), value);
  storage()->bump_version();
  return *this;
}

Tensor& Tensor::zero_() { return fill_(0); }

// The one in-place op that crosses devices: values from another device come over first (a
// checkpoint loaded on the host into a model on a GPU, for instance).
Tensor& Tensor::copy_(const Tensor& src) {
  check_writable(*this, &src, "copy_");
  if (numel() > 0) {
    const bool other_device = src.defined() && src.device() != device();
    const Tensor source = operand(*this, other_device ? src.detach().to(device()) : src, "copy_");
    detail::backend_of(*this).copy(detail::ref(*this), detail::broadcast_ref(source, shape()));
  }
  storage()->bump_version();
  return *this;
}

Tensor& Tensor::add_(const Tensor& other, double alpha) {
  if (alpha == 1.0) return binary_inplace(*this, backend::BinaryOp::Add, other, "add_");
  check_writable(*this, &other, "add_");
  autograd::primitive::check_defined(other, "add_");
  return binary_inplace(*this, backend::BinaryOp::Add, other.detach() * alpha, "add_");
}
Tensor& Tensor::sub_(const Tensor& other) {
  return binary_inplace(*this, backend::BinaryOp::Sub, other, "sub_");
}
Tensor& Tensor::mul_(const Tensor& other) {
  return binary_inplace(*this, backend::BinaryOp::Mul, other, "mul_");
}
Tensor& Tensor::div_(const Tensor& other) {
  return binary_inplace(*this, backend::BinaryOp::Div, other, "div_");
}
Tensor& Tensor::add_(double value) {
  return unary_inplace(*this, backend::UnaryOp::AddScalar, value, "add_");
}
Tensor& Tensor::mul_(double value) {
  return unary_inplace(*this, backend::UnaryOp::MulScalar, value, "mul_");
}
Tensor& Tensor::div_(double value) {
  autograd::primitive::check_defined(*this, "div_");
  return div_(scalar_tensor(value, {.dtype = dtype(), .device = device()}));
}

}  // namespace normgrad
