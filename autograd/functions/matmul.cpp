// Matrix products through the backend's GEMM. For Y = A B:
//   dA = dY B^T,  dB = A^T dY,
// where the transposes are views (the GEMM reads them with its transpose flags) and batch
// dims that broadcasting expanded are summed back.

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

namespace {

// Whether the last two dims of x are laid out as the transpose of a row-major matrix, as
// weight.t() in Linear is.
bool transposed_layout(const Tensor& x) {
  if (x.dim() < 2 || x.is_contiguous()) return false;
  return x.transpose(-1, -2).is_contiguous();
}

// The gradient `left @ right` of an operand shaped like `like`, in like's layout: for an
// operand that is a transposed view, the GEMM writes the transpose (right^T left^T) and the
// result is its transposed view. The gradient then reaches the view's own backward, and the
// leaf under it, as a row-major tensor, which is summed and copied at memory speed; a
// transposed gradient would be read column by column at every sum over steps.
Tensor product_like(const Tensor& like, const Tensor& left, const Tensor& right) {
  if (!transposed_layout(like)) return sum_to(matmul(left, right), like.shape());
  const Tensor transposed = matmul(right.transpose(-1, -2), left.transpose(-1, -2));
  return sum_to(transposed, like.transpose(-1, -2).shape()).transpose(-1, -2);
}

// Both operands have rank >= 2 here.
Tensor batched_matmul(const Tensor& a, const Tensor& b) {
  Tensor y = autograd::primitive::matmul(a, b, "matmul");
  if (needs_grad(a, b))
    record("MatmulBackward", y, {a, b}, {a, b},
           [need_a = a.requires_grad(), need_b = b.requires_grad()](const Tensor& dy,
                                                                    const SavedTensors& s) {
             Grads grads(2);
             if (need_a) grads[0] = product_like(s[0], dy, s[1].transpose(-1, -2));
             if (need_b) grads[1] = product_like(s[1], s[0].transpose(-1, -2), dy);
             return grads;
           });
  return y;
}

}  // namespace

Tensor addmm(const Tensor& bias, const Tensor& a, const Tensor& b) {
  autograd::primitive::check_defined(bias, "addmm");
  autograd::primitive::check_defined(a, "addmm");
  autograd::primitive::check_defined(b, "addmm");
  NG_CHECK(a.dim() == 2 && b.dim() == 2, "addmm", "expects two matrices, got ", a.shape(), " and ",
           b.shape());
  NG_CHECK(a.size(1) == b.size(0), "addmm", "inner dimensions differ: ", a.shape(), " @ ",
           b.shape());
  const Shape shape{a.size(0), b.size(1)};
  NG_CHECK(bias.dim() <= 2 && broadcast_shapes(bias.shape(), shape, "addmm") == shape, "addmm",
           "a bias of shape ", bias.shape(), " does not broadcast to the product's ", shape);
  Tensor y = autograd::primitive::matmul(a, b, "addmm", bias);
  if (needs_grad(bias, a, b))
    record("AddmmBackward", y, {bias, a, b}, {bias, a, b},
           [need_bias = bias.requires_grad(), need_a = a.requires_grad(),
            need_b = b.requires_grad()](const Tensor& dy, const SavedTensors& s) {
             Grads grads(3);
             if (need_bias) grads[0] = sum_to(dy, s[0].shape());
             if (need_a) grads[1] = product_like(s[1], dy, s[2].transpose(-1, -2));
             if (need_b) grads[2] = product_like(s[2], s[1].transpose(-1, -2), dy);
             return grads;
           });
  return y;
}

Tensor matmul(const Tensor& a, const Tensor& b) {
  autograd::primitive::check_defined(a, "matmul");
  autograd::primitive::check_defined(b, "matmul");
  NG_CHECK(a.dim() >= 1 && b.dim() >= 1, "matmul", "both operands need at least one dim, got ",
           a.shape(), " and ", b.shape());
  // NumPy rules: a 1-d left operand is a row vector, a 1-d right operand a column vector;
  // the added dim is removed from the result.
  const bool a_vector = a.dim() == 1, b_vector = b.dim() == 1;
  const Tensor b_matrix = b_vector ? b.unsqueeze(1) : b;
  if (a.dim() > 2 && b_matrix.dim() == 2 && a.is_contiguous() && a.size(-1) > 0) {
    // A stack of matrices times one matrix is one product of all their rows, [..., M, K] as
    // [(...) M, K]: one large GEMM instead of one small GEMM per matrix (and, in backward, one
    // for dB instead of a product per matrix summed over the stack).
    Shape out_shape = a.shape();
    out_shape.back() = b_matrix.size(1);
    Tensor y = batched_matmul(a.reshape({a.numel() / a.size(-1), a.size(-1)}), b_matrix)
                   .reshape(out_shape);
    return b_vector ? y.squeeze(-1) : y;
  }
  Tensor y = batched_matmul(a_vector ? a.unsqueeze(0) : a, b_matrix);
  if (b_vector) y = y.squeeze(-1);
  if (a_vector) y = y.squeeze(b_vector ? -1 : -2);
  return y;
}

}  // namespace normgrad
