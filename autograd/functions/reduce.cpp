// Reductions. The kernels sum blockwise and pairwise, so results do not depend on the
// thread count. Gradients: a sum spreads dy back over the reduced dims; a max/min sends it
// to the (first) position that won.

#include "autograd/ops.h"
#include "autograd/primitives.h"
#include "autograd/record.h"
#include "base/error.h"

namespace normgrad {

using autograd::Grads;
using autograd::needs_grad;
using autograd::record;
using autograd::SavedTensors;
namespace primitive = autograd::primitive;
using backend::ReduceOp;

namespace {

std::int64_t reduced_count(const Shape& shape, std::uint64_t mask) {
  std::int64_t count = 1;
  for (std::size_t d = 0; d < shape.size(); ++d)
    if (mask >> d & 1) count *= shape[d];
  return count;
}

// Back from a reduction result to the keepdim shape (the reduced dims as size-1 dims).
Tensor restore_reduced_dims(const Tensor& reduced, const Shape& input_shape, std::uint64_t mask,
                            bool keepdim) {
  if (keepdim) return reduced;
  Shape shape = input_shape;
  for (std::size_t d = 0; d < shape.size(); ++d)
    if (mask >> d & 1) shape[d] = 1;
  return reduced.reshape(shape);
}

Tensor sum_like(const Tensor& x, const std::vector<std::int64_t>& dims, bool keepdim,
                bool average, const char* name) {
  primitive::check_defined(x, name);
  if (average) primitive::check_floating(x, name);
  const std::uint64_t mask = primitive::reduction_mask(dims, x.dim(), name);
  const std::int64_t count = reduced_count(x.shape(), mask);
  const double scale = average ? 1.0 / static_cast<double>(count) : 1.0;
  Tensor kept = primitive::reduce(ReduceOp::Sum, x, mask, scale, name);
  Tensor y = keepdim ? kept : primitive::drop_reduced_dims(kept, mask);
  if (needs_grad(x))  // d sum(x) = sum(dx): every x_i receives dy (times 1/n for a mean)
    record(average ? "MeanBackward" : "SumBackward", y, {x}, {},
           [shape = x.shape(), mask, keepdim, scale](const Tensor& dy, const SavedTensors&) {
             Tensor spread = restore_reduced_dims(dy, shape, mask, keepdim).expand(shape);
             return Grads{scale == 1.0 ? spread.contiguous() : spread * scale};
           });
  return y;
}

Tensor extremum(const Tensor& x, std::int64_t dim, bool keepdim, bool is_max) {
  const char* name = is_max ? "max" : "min";
  primitive::check_defined(x, name);
  const std::uint64_t mask = primitive::reduction_mask({dim}, x.dim(), name);
  Tensor kept = primitive::reduce(is_max ? ReduceOp::Max : ReduceOp::Min, x, mask, 1, name);
  Tensor y = keepdim ? kept : primitive::drop_reduced_dims(kept, mask);
  if (needs_grad(x)) {
    Tensor winner = primitive::reduce(is_max ? ReduceOp::ArgMax : ReduceOp::ArgMin, x, mask, 1, name);
    // dx = dy at the winning index along dim, 0 elsewhere.
    record(is_max ? "MaxBackward" : "MinBackward", y, {x}, {winner},
           [shape = x.shape(), mask, keepdim, d = wrap_dim(dim, x.dim(), name)](
               const Tensor& dy, const SavedTensors& s) {
             Tensor dy_kept = restore_reduced_dims(dy, shape, mask, keepdim);
             return Grads{scatter_add(zeros(shape, {.dtype = dy.dtype(), .device = dy.device()}),
                                      shape.empty() ? 0 : d, s[0], dy_kept)};
           });
  }
  return y;
}

Tensor arg_extremum(const Tensor& x, std::int64_t dim, bool keepdim, bool is_max) {
  const char* name = is_max ? "argmax" : "argmin";
  primitive::check_defined(x, name);
  const std::uint64_t mask = primitive::reduction_mask({dim}, x.dim(), name);
  Tensor kept =
      primitive::reduce(is_max ? ReduceOp::ArgMax : ReduceOp::ArgMin, x, mask, 1, name);
  return keepdim ? kept : primitive::drop_reduced_dims(kept, mask);
}

}  // namespace

Tensor sum(const Tensor& x, const std::vector<std::int64_t>& dims, bool keepdim) {
  return sum_like(x, dims, keepdim, false, "sum");
}

Tensor mean(const Tensor& x, const std::vector<std::int64_t>& dims, bool keepdim) {
  return sum_like(x, dims, keepdim, true, "mean");
}

Tensor var(const Tensor& x, const std::vector<std::int64_t>& dims, bool keepdim,
           bool unbiased) {
  primitive::check_floating(x, "var");
  const std::uint64_t mask = primitive::reduction_mask(dims, x.dim(), "var");
  const std::int64_t count = reduced_count(x.shape(), mask);
  NG_CHECK(count > (unbiased ? 1 : 0), "var", "needs at least ", unbiased ? 2 : 1,
           " elements per reduction, got ", count, " (shape ", x.shape(), ")");
  // Centred two-pass: var = sum((x - mean)^2) / (n or n - 1). Never E[x^2] - E[x]^2, which
  // cancels catastrophically when the mean is large against the spread.
  const Tensor centred = x - mean(x, dims, true);
  const double divisor = static_cast<double>(unbiased ? count - 1 : count);
  return sum(square(centred), dims, keepdim) / divisor;
}

Tensor max(const Tensor& x) {
  primitive::check_defined(x, "max");
  return extremum(x.reshape({-1}), 0, false, true);
}
Tensor min(const Tensor& x) {
  primitive::check_defined(x, "min");
  return extremum(x.reshape({-1}), 0, false, false);
}
Tensor max(const Tensor& x, std::int64_t dim, bool keepdim) { return extremum(x, dim, keepdim, true); }
Tensor min(const Tensor& x, std::int64_t dim, bool keepdim) { return extremum(x, dim, keepdim, false); }
Tensor argmax(const Tensor& x, std::int64_t dim, bool keepdim) {
  return arg_extremum(x, dim, keepdim, true);
}
Tensor argmin(const Tensor& x, std::int64_t dim, bool keepdim) {
  return arg_extremum(x, dim, keepdim, false);
}

}  // namespace normgrad
