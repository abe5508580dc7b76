// Elementwise ops of two tensors, with NumPy broadcasting. Gradients of broadcast operands
// are summed back to their own shapes (sum_to).

#include "autograd/ops.h"
#include "autograd/primitives.h"
#include "autograd/record.h"

namespace normgrad {

using autograd::Grads;
using autograd::needs_grad;
using autograd::record;
using autograd::SavedTensors;
using autograd::sum_to;
using backend::BinaryOp;

Tensor add(const Tensor& a, const Tensor& b) {
  Tensor y = autograd::primitive::binary(BinaryOp::Add, a, b, "add");
  if (needs_grad(a, b))  // d(a + b) = da + db
    record("AddBackward", y, {a, b}, {},
           [sa = a.shape(), sb = b.shape()](const Tensor& dy, const SavedTensors&) {
             return Grads{sum_to(dy, sa), sum_to(dy, sb)};
           });
  return y;
}

Tensor sub(const Tensor& a, const Tensor& b) {
  Tensor y = autograd::primitive::binary(BinaryOp::Sub, a, b, "sub");
  if (needs_grad(a, b))  // d(a - b) = da - db
    record("SubBackward", y, {a, b}, {},
           [sa = a.shape(), sb = b.shape()](const Tensor& dy, const SavedTensors&) {
             return Grads{sum_to(dy, sa), sum_to(-dy, sb)};
           });
  return y;
}

Tensor mul(const Tensor& a, const Tensor& b) {
  Tensor y = autograd::primitive::binary(BinaryOp::Mul, a, b, "mul");
  if (needs_grad(a, b))  // d(a b) = b da + a db
    record("MulBackward", y, {a, b}, {a, b}, [](const Tensor& dy, const SavedTensors& s) {
      return Grads{sum_to(dy * s[1], s[0].shape()), sum_to(dy * s[0], s[1].shape())};
    });
  return y;
}

Tensor div(const Tensor& a, const Tensor& b) {
  Tensor y = autograd::primitive::binary(BinaryOp::Div, a, b, "div");
  if (needs_grad(a, b))  // d(a / b) = da / b - (a / b^2) db
    record("DivBackward", y, {a, b}, {a, b}, [](const Tensor& dy, const SavedTensors& s) {
      const Tensor da = dy / s[1];
      return Grads{sum_to(da, s[0].shape()), sum_to(-(da * s[0] / s[1]), s[1].shape())};
    });
  return y;
}

Tensor pow(const Tensor& base, const Tensor& exponent) {
  Tensor y = autograd::primitive::binary(BinaryOp::Pow, base, exponent, "pow");
  if (needs_grad(base, exponent))
    // d(a^b) = b a^(b-1) da + a^b ln(a) db. The db term is only defined for a > 0; where
    // a == 0 it is taken as 0 (the limit for b > 0), as other frameworks do.
    record("PowBackward", y, {base, exponent}, {base, exponent, y},
           [](const Tensor& dy, const SavedTensors& s) {
             const Tensor& a = s[0];
             const Tensor& b = s[1];
             const Tensor da = dy * b * pow(a, b - 1.0);
             const Tensor log_a = log(where(eq(a, 0.0), ones_like(a), a));
             const Tensor db = dy * s[2] * log_a;
             return Grads{sum_to(da, a.shape()), sum_to(db, b.shape())};
           });
  return y;
}

namespace {
// maximum/minimum: the gradient goes to the chosen operand; on ties each gets half.
Tensor extremum(const Tensor& a, const Tensor& b, bool is_max) {
  Tensor y = autograd::primitive::binary(is_max ? BinaryOp::Maximum : BinaryOp::Minimum, a, b,
                                         is_max ? "maximum" : "minimum");
  if (needs_grad(a, b))
    record(is_max ? "MaximumBackward" : "MinimumBackward", y, {a, b}, {a, b},
           [is_max](const Tensor& dy, const SavedTensors& s) {
             const Tensor a_wins = is_max ? gt(s[0], s[1]) : lt(s[0], s[1]);
             const Tensor share_a = a_wins + eq(s[0], s[1]) * 0.5;
             return Grads{sum_to(dy * share_a, s[0].shape()),
                          sum_to(dy * (1.0 - share_a), s[1].shape())};
           });
  return y;
}
}  // namespace

Tensor maximum(const Tensor& a, const Tensor& b) { return extremum(a, b, true); }
Tensor minimum(const Tensor& a, const Tensor& b) { return extremum(a, b, false); }

Tensor operator+(const Tensor& a, const Tensor& b) { return add(a, b); }
Tensor operator-(const Tensor& a, const Tensor& b) { return sub(a, b); }
Tensor operator*(const Tensor& a, const Tensor& b) { return mul(a, b); }
Tensor operator/(const Tensor& a, const Tensor& b) { return div(a, b); }

}  // namespace normgrad
