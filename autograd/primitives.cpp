#include "autograd/primitives.h"

#include "base/error.h"
#include "core/tensor_internal.h"

namespace normgrad::autograd::primitive {

using detail::backend_of;
using detail::broadcast_ref;
using detail::make_tensor;
using detail::ref;

void check_defined(const Tensor& tensor, const char* op) {
  NG_CHECK(tensor.defined(), op, "the tensor is undefined (default-constructed)");
}

void check_floating(const Tensor& tensor, const char* op) {
  check_defined(tensor, op);
  NG_CHECK(is_floating(tensor.dtype()), op, "expected a floating-point tensor, got ",
           tensor.dtype(), " of shape ", tensor.shape());
}

void check_same_device(const Tensor& a, const Tensor& b, const char* op) {
  NG_CHECK(a.device() == b.device(), op, "tensors are on different devices: ", a.device(), " and ",
           b.device());
}

void check_same_dtype(const Tensor& a, const Tensor& b, const char* op) {
  NG_CHECK(a.dtype() == b.dtype(), op, "dtypes differ: ", a.dtype(), " and ", b.dtype(),
           " (convert one with .to(dtype))");
}

Tensor unary(backend::UnaryOp op, const Tensor& x, const char* name, double alpha, double beta) {
  check_defined(x, name);
  Tensor out = make_tensor(x.shape(), x.dtype(), x.device());
  if (out.numel() > 0) backend_of(out).unary(op, ref(out), ref(x), alpha, beta);
  return out;
}

Tensor binary(backend::BinaryOp op, const Tensor& a, const Tensor& b, const char* name,
              double alpha) {
  check_defined(a, name);
  check_defined(b, name);
  check_same_device(a, b, name);
  check_same_dtype(a, b, name);
  const Shape shape =
      a.shape() == b.shape() ? a.shape() : broadcast_shapes(a.shape(), b.shape(), name);
  Tensor out = make_tensor(shape, a.dtype(), a.device());
  if (out.numel() > 0)
    backend_of(out).binary(op, ref(out), broadcast_ref(a, shape), broadcast_ref(b, shape), alpha);
  return out;
}

Tensor where(const Tensor& condition, const Tensor& a, const Tensor& b, const char* name) {
  check_defined(condition, name);
  check_defined(a, name);
  check_defined(b, name);
  check_same_device(a, b, name);
  check_same_device(condition, a, name);
  check_same_dtype(a, b, name);
  const Shape shape =
      broadcast_shapes(condition.shape(), broadcast_shapes(a.shape(), b.shape(), name), name);
  Tensor out = make_tensor(shape, a.dtype(), a.device());
  if (out.numel() > 0)
    backend_of(out).where(ref(out), broadcast_ref(condition, shape), broadcast_ref(a, shape),
                          broadcast_ref(b, shape));
  return out;
}

std::uint64_t reduction_mask(const std::vector<std::int64_t>& dims, std::int64_t rank,
                             const char* name) {
  NG_CHECK(rank <= 64, name, "tensors of rank ", rank, " are not supported (at most 64)");
  if (dims.empty()) return rank == 64 ? ~0ull : (1ull << rank) - 1;
  std::uint64_t mask = 0;
  for (std::int64_t dim : dims) {
    const int d = wrap_dim(dim, rank, name);
    NG_CHECK(!(mask >> d & 1), name, "dim ", dim, " appears more than once in the dims list");
    if (rank > 0) mask |= 1ull << d;
  }
  return mask;
}

Tensor reduce(backend::ReduceOp op, const Tensor& x, std::uint64_t mask, double scale,
              const char* name) {
  check_defined(x, name);
  Shape shape = x.shape();
  for (std::size_t d = 0; d < shape.size(); ++d)
    if (mask >> d & 1) shape[d] = 1;
  const bool index_result = op == backend::ReduceOp::ArgMax || op == backend::ReduceOp::ArgMin;
  const bool extremum =
      index_result || op == backend::ReduceOp::Max || op == backend::ReduceOp::Min;
  if (extremum) {
    for (std::size_t d = 0; d < shape.size(); ++d)
      NG_CHECK(!(mask >> d & 1) || x.shape()[d] > 0, name, "cannot reduce dim ", d,
               " of size 0 (shape ", x.shape(), "): there is no maximum or minimum of nothing");
  }
  Tensor out = make_tensor(shape, index_result ? DType::Int64 : x.dtype(), x.device());
  if (out.numel() == 0) return out;
  if (x.numel() == 0) {  // an empty sum
    backend_of(out).fill(ref(out), 0);
    return out;
  }
  backend_of(out).reduce(op, ref(out), ref(x), mask, scale);
  return out;
}

Tensor drop_reduced_dims(const Tensor& kept, std::uint64_t mask) {
  Shape shape;
  for (std::size_t d = 0; d < kept.shape().size(); ++d)
    if (!(mask >> d & 1)) shape.push_back(kept.shape()[d]);
  return detail::make_view(kept, shape, contiguous_strides(shape), kept.offset());
}

Tensor matmul(const Tensor& a, const Tensor& b, const char* name, const Tensor& addend) {
  check_floating(a, name);
  check_floating(b, name);
  check_same_device(a, b, name);
  check_same_dtype(a, b, name);
  const std::int64_t m = a.size(-2), k = a.size(-1), n = b.size(-1);
  NG_CHECK(b.size(-2) == k, name, "inner dimensions differ: ", a.shape(), " @ ", b.shape(), " (", k,
           " vs ", b.size(-2), ")");
  const Shape a_batch(a.shape().begin(), a.shape().end() - 2);
  const Shape b_batch(b.shape().begin(), b.shape().end() - 2);
  Shape shape = broadcast_shapes(a_batch, b_batch, name);
  Shape a_shape = shape, b_shape = shape;
  shape.insert(shape.end(), {m, n});
  a_shape.insert(a_shape.end(), {m, k});
  b_shape.insert(b_shape.end(), {k, n});
  Tensor out = make_tensor(shape, a.dtype(), a.device());
  if (out.numel() == 0) return out;
  if (addend.defined()) {
    check_same_device(a, addend, name);
    check_same_dtype(a, addend, name);
    backend_of(out).copy(ref(out), broadcast_ref(addend, shape));
  }
  backend_of(out).matmul(ref(out), broadcast_ref(a, a_shape), broadcast_ref(b, b_shape),
                         addend.defined());
  return out;
}

}  // namespace normgrad::autograd::primitive
