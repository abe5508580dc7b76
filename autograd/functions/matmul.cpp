// Matrix products through the backend's GEMM. For Y = A B:
//   dA = dY B^T,  dB = A^T dY,
// where the transposes are views (the GEMM reads them with its transpose flags) and batch
// dims that broadcasting expanded are summed back.

#include "autograd/ops.h"
#include "autograd/primitives.h"
#include "autograd/record.h"
#include "core/error.h"

namespace normgrad {

using autograd::Grads;
using autograd::needs_grad;
using autograd::record;
using autograd::SavedTensors;
using autograd::sum_to;

namespace {

// Both operands have rank >= 2 here.
Tensor batched_matmul(const Tensor& a, const Tensor& b) {
  Tensor y = autograd::primitive::matmul(a, b, "matmul");
  if (needs_grad(a, b))
    record("MatmulBackward", y, {a, b}, {a, b},
           [need_a = a.requires_grad(), need_b = b.requires_grad()](const Tensor& dy,
                                                                    const SavedTensors& s) {
             Grads grads(2);
             if (need_a) grads[0] = sum_to(matmul(dy, s[1].transpose(-1, -2)), s[0].shape());
             if (need_b) grads[1] = sum_to(matmul(s[0].transpose(-1, -2), dy), s[1].shape());
             return grads;
           });
  return y;
}

}  // namespace

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
