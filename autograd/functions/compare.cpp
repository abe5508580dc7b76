// Comparisons (1 where true, 0 where false, in the operands' dtype; no gradient) and the
// selections built on them.

#include "autograd/ops.h"
#include "autograd/primitives.h"
#include "autograd/record.h"
#include "base/error.h"

namespace normgrad {

using autograd::Grads;
using autograd::needs_grad;
using autograd::record;
using autograd::SavedTensors;
using autograd::sum_to;
using autograd::primitive::binary;
using backend::BinaryOp;

namespace {
Tensor as_tensor_like(double value, const Tensor& like) {
  autograd::primitive::check_defined(like, "compare");
  return scalar_tensor(value, {.dtype = like.dtype(), .device = like.device()});
}
}  // namespace

Tensor eq(const Tensor& a, const Tensor& b) { return binary(BinaryOp::Eq, a, b, "eq"); }
Tensor ne(const Tensor& a, const Tensor& b) { return binary(BinaryOp::Ne, a, b, "ne"); }
Tensor lt(const Tensor& a, const Tensor& b) { return binary(BinaryOp::Lt, a, b, "lt"); }
Tensor le(const Tensor& a, const Tensor& b) { return binary(BinaryOp::Le, a, b, "le"); }
Tensor gt(const Tensor& a, const Tensor& b) { return binary(BinaryOp::Gt, a, b, "gt"); }
Tensor ge(const Tensor& a, const Tensor& b) { return binary(BinaryOp::Ge, a, b, "ge"); }
Tensor eq(const Tensor& a, double b) { return eq(a, as_tensor_like(b, a)); }
Tensor ne(const Tensor& a, double b) { return ne(a, as_tensor_like(b, a)); }
Tensor lt(const Tensor& a, double b) { return lt(a, as_tensor_like(b, a)); }
Tensor le(const Tensor& a, double b) { return le(a, as_tensor_like(b, a)); }
Tensor gt(const Tensor& a, double b) { return gt(a, as_tensor_like(b, a)); }
Tensor ge(const Tensor& a, double b) { return ge(a, as_tensor_like(b, a)); }

Tensor where(const Tensor& condition, const Tensor& a, const Tensor& b) {
  Tensor y = autograd::primitive::where(condition, a, b, "where");
  if (needs_grad(a, b))  // the gradient flows to whichever operand was chosen
    record("WhereBackward", y, {a, b}, {condition},
           [sa = a.shape(), sb = b.shape()](const Tensor& dy, const SavedTensors& s) {
             const Tensor zero = zeros({}, {.dtype = dy.dtype(), .device = dy.device()});
             return Grads{sum_to(where(s[0], dy, zero), sa), sum_to(where(s[0], zero, dy), sb)};
           });
  return y;
}

Tensor masked_fill(const Tensor& x, const Tensor& mask, double value) {
  autograd::primitive::check_defined(x, "masked_fill");
  autograd::primitive::check_defined(mask, "masked_fill");
  NG_CHECK(broadcast_shapes(mask.shape(), x.shape(), "masked_fill") == x.shape(), "masked_fill",
           "mask of shape ", mask.shape(), " does not broadcast to the input's shape ", x.shape());
  return where(mask, as_tensor_like(value, x), x);
}

}  // namespace normgrad
