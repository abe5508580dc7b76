// Elementwise ops of one tensor. Each backward is written in terms of the saved input x or
// the saved output y, whichever makes it cheaper.

#include <cmath>

#include "autograd/ops.h"
#include "autograd/primitives.h"
#include "autograd/record.h"
#include "base/error.h"

namespace normgrad {

using autograd::Grads;
using autograd::needs_grad;
using autograd::record;
using autograd::SavedTensors;
using autograd::primitive::binary;
using autograd::primitive::check_floating;
using autograd::primitive::unary;
using backend::BinaryOp;
using backend::UnaryOp;

Tensor neg(const Tensor& x) {
  Tensor y = unary(UnaryOp::Neg, x, "neg");
  if (needs_grad(x))  // d(-x) = -dx
    record("NegBackward", y, {x}, {},
           [](const Tensor& dy, const SavedTensors&) { return Grads{-dy}; });
  return y;
}

Tensor operator-(const Tensor& a) { return neg(a); }

Tensor exp(const Tensor& x) {
  check_floating(x, "exp");
  Tensor y = unary(UnaryOp::Exp, x, "exp");
  if (needs_grad(x))  // d e^x = e^x dx = y dx
    record("ExpBackward", y, {x}, {y},
           [](const Tensor& dy, const SavedTensors& s) { return Grads{dy * s[0]}; });
  return y;
}

Tensor log(const Tensor& x) {
  check_floating(x, "log");
  Tensor y = unary(UnaryOp::Log, x, "log");
  if (needs_grad(x))  // d ln x = dx / x
    record("LogBackward", y, {x}, {x},
           [](const Tensor& dy, const SavedTensors& s) { return Grads{dy / s[0]}; });
  return y;
}

Tensor sqrt(const Tensor& x) {
  check_floating(x, "sqrt");
  Tensor y = unary(UnaryOp::Sqrt, x, "sqrt");
  if (needs_grad(x))  // d sqrt(x) = dx / (2 sqrt(x)) = 0.5 dx / y
    record("SqrtBackward", y, {x}, {y},
           [](const Tensor& dy, const SavedTensors& s) { return Grads{dy * 0.5 / s[0]}; });
  return y;
}

Tensor rsqrt(const Tensor& x) {
  check_floating(x, "rsqrt");
  Tensor y = unary(UnaryOp::Rsqrt, x, "rsqrt");
  if (needs_grad(x))  // d x^(-1/2) = -(1/2) x^(-3/2) dx = -(1/2) y^3 dx
    record("RsqrtBackward", y, {x}, {y}, [](const Tensor& dy, const SavedTensors& s) {
      return Grads{dy * pow(s[0], 3.0) * -0.5};
    });
  return y;
}

Tensor abs(const Tensor& x) {
  Tensor y = unary(UnaryOp::Abs, x, "abs");
  if (needs_grad(x))  // d|x| = sign(x) dx
    record("AbsBackward", y, {x}, {x},
           [](const Tensor& dy, const SavedTensors& s) { return Grads{dy * sign(s[0])}; });
  return y;
}

Tensor square(const Tensor& x) {
  Tensor y = unary(UnaryOp::Square, x, "square");
  if (needs_grad(x))  // d x^2 = 2 x dx
    record("SquareBackward", y, {x}, {x},
           [](const Tensor& dy, const SavedTensors& s) { return Grads{dy * s[0] * 2.0}; });
  return y;
}

Tensor sign(const Tensor& x) { return unary(UnaryOp::Sign, x, "sign"); }

Tensor tanh(const Tensor& x) {
  check_floating(x, "tanh");
  Tensor y = unary(UnaryOp::Tanh, x, "tanh");
  if (needs_grad(x))  // d tanh x = (1 - y^2) dx
    record("TanhBackward", y, {x}, {y}, [](const Tensor& dy, const SavedTensors& s) {
      return Grads{binary(BinaryOp::TanhGrad, dy, s[0], "tanh backward")};
    });
  return y;
}

Tensor sigmoid(const Tensor& x) {
  check_floating(x, "sigmoid");
  Tensor y = unary(UnaryOp::Sigmoid, x, "sigmoid");
  if (needs_grad(x))  // d sigma(x) = y (1 - y) dx
    record("SigmoidBackward", y, {x}, {y}, [](const Tensor& dy, const SavedTensors& s) {
      return Grads{binary(BinaryOp::SigmoidGrad, dy, s[0], "sigmoid backward")};
    });
  return y;
}

Tensor relu(const Tensor& x) {
  check_floating(x, "relu");
  Tensor y = unary(UnaryOp::Relu, x, "relu");
  if (needs_grad(x))  // d max(x, 0) = [x > 0] dx; y > 0 exactly where x > 0
    record("ReluBackward", y, {x}, {y}, [](const Tensor& dy, const SavedTensors& s) {
      return Grads{binary(BinaryOp::ReluGrad, dy, s[0], "relu backward")};
    });
  return y;
}

Tensor leaky_relu(const Tensor& x, double negative_slope) {
  check_floating(x, "leaky_relu");
  Tensor y = unary(UnaryOp::LeakyRelu, x, "leaky_relu", negative_slope);
  if (needs_grad(x))  // d = (x > 0 ? 1 : slope) dx
    record("LeakyReluBackward", y, {x}, {x},
           [negative_slope](const Tensor& dy, const SavedTensors& s) {
             return Grads{
                 binary(BinaryOp::LeakyReluGrad, dy, s[0], "leaky_relu backward", negative_slope)};
           });
  return y;
}

Tensor gelu(const Tensor& x) {
  check_floating(x, "gelu");
  Tensor y = unary(UnaryOp::Gelu, x, "gelu");
  if (needs_grad(x))  // d x Phi(x) = (Phi(x) + x phi(x)) dx
    record("GeluBackward", y, {x}, {x}, [](const Tensor& dy, const SavedTensors& s) {
      return Grads{binary(BinaryOp::GeluGrad, dy, s[0], "gelu backward")};
    });
  return y;
}

Tensor clamp(const Tensor& x, double min, double max) {
  NG_CHECK(!(min > max), "clamp", "min ", min, " is greater than max ", max);
  Tensor y = unary(UnaryOp::Clamp, x, "clamp", min, max);
  if (needs_grad(x))  // d clamp(x) = [min <= x <= max] dx
    record("ClampBackward", y, {x}, {x}, [min, max](const Tensor& dy, const SavedTensors& s) {
      return Grads{dy * ge(s[0], min) * le(s[0], max)};
    });
  return y;
}

}  // namespace normgrad
