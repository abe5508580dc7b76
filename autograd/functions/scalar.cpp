// Elementwise ops of a tensor and a number. The number takes the tensor's dtype.

#include "autograd/ops.h"
#include "autograd/primitives.h"
#include "autograd/record.h"

namespace normgrad {

using autograd::Grads;
using autograd::needs_grad;
using autograd::record;
using autograd::SavedTensors;
using backend::UnaryOp;

namespace {
Tensor scalar_op(UnaryOp op, const Tensor& x, double value, const char* name) {
  return autograd::primitive::unary(op, x, name, value);
}
}  // namespace

Tensor add(const Tensor& a, double b) {
  Tensor y = scalar_op(UnaryOp::AddScalar, a, b, "add");
  if (needs_grad(a))  // d(a + c) = da
    record("AddScalarBackward", y, {a}, {},
           [](const Tensor& dy, const SavedTensors&) { return Grads{dy}; });
  return y;
}

Tensor sub(const Tensor& a, double b) { return add(a, -b); }

Tensor mul(const Tensor& a, double b) {
  Tensor y = scalar_op(UnaryOp::MulScalar, a, b, "mul");
  if (needs_grad(a))  // d(c a) = c da
    record("MulScalarBackward", y, {a}, {},
           [b](const Tensor& dy, const SavedTensors&) { return Grads{dy * b}; });
  return y;
}

Tensor div(const Tensor& a, double b) {
  // A true division (not a * (1/b), which can differ in the last bit).
  autograd::primitive::check_defined(a, "div");
  return div(a, scalar_tensor(b, {.dtype = a.dtype(), .device = a.device()}));
}

Tensor pow(const Tensor& base, double exponent) {
  autograd::primitive::check_floating(base, "pow");
  Tensor y = scalar_op(UnaryOp::PowScalar, base, exponent, "pow");
  if (needs_grad(base))  // d(a^c) = c a^(c-1) da
    record("PowScalarBackward", y, {base}, {base},
           [exponent](const Tensor& dy, const SavedTensors& s) {
             if (exponent == 0) return Grads{zeros_like(dy)};
             return Grads{dy * (pow(s[0], exponent - 1) * exponent)};
           });
  return y;
}

Tensor rsub(const Tensor& a, double b) {
  Tensor y = scalar_op(UnaryOp::RsubScalar, a, b, "rsub");
  if (needs_grad(a))  // d(c - a) = -da
    record("RsubBackward", y, {a}, {},
           [](const Tensor& dy, const SavedTensors&) { return Grads{-dy}; });
  return y;
}

Tensor rdiv(const Tensor& a, double b) {
  autograd::primitive::check_floating(a, "rdiv");
  Tensor y = scalar_op(UnaryOp::RdivScalar, a, b, "rdiv");
  if (needs_grad(a))  // d(c / a) = -(c / a^2) da = -(y / a) da
    record("RdivBackward", y, {a}, {a, y}, [](const Tensor& dy, const SavedTensors& s) {
      return Grads{-(dy * s[1] / s[0])};
    });
  return y;
}

Tensor operator+(const Tensor& a, double b) { return add(a, b); }
Tensor operator-(const Tensor& a, double b) { return sub(a, b); }
Tensor operator*(const Tensor& a, double b) { return mul(a, b); }
Tensor operator/(const Tensor& a, double b) { return div(a, b); }
Tensor operator+(double a, const Tensor& b) { return add(b, a); }
Tensor operator-(double a, const Tensor& b) { return rsub(b, a); }
Tensor operator*(double a, const Tensor& b) { return mul(b, a); }
Tensor operator/(double a, const Tensor& b) { return rdiv(b, a); }

}  // namespace normgrad
