#pragma once
// Checked, non-differentiable calls into the backend: argument checks, broadcasting, output
// allocation, then one kernel. The differentiable ops in functions/ are built on these and
// add the graph; backward passes may call them directly.

#include <cstdint>
#include <vector>

#include "backends/backend.h"
#include "core/tensor.h"

namespace normgrad::autograd::primitive {

// Throws "op: the tensor is undefined" / "op: expected a floating dtype, got int64".
void check_defined(const Tensor& tensor, const char* op);
void check_floating(const Tensor& tensor, const char* op);
void check_same_device(const Tensor& a, const Tensor& b, const char* op);
void check_same_dtype(const Tensor& a, const Tensor& b, const char* op);

Tensor unary(backend::UnaryOp op, const Tensor& x, const char* name, double alpha = 0,
             double beta = 0);
// Broadcasts a and b (same dtype and device); the result has their dtype.
Tensor binary(backend::BinaryOp op, const Tensor& a, const Tensor& b, const char* name,
              double alpha = 0);
Tensor where(const Tensor& condition, const Tensor& a, const Tensor& b, const char* name);

// A mask with bit d set for each dim to reduce. An empty list means every dim.
std::uint64_t reduction_mask(const std::vector<std::int64_t>& dims, std::int64_t rank,
                             const char* name);
// Reduces the dims in `mask`, keeping them with size 1. ArgMax/ArgMin give int64.
Tensor reduce(backend::ReduceOp op, const Tensor& x, std::uint64_t mask, double scale,
              const char* name);
// Drops the size-1 dims of a keepdim result that `mask` reduced.
Tensor drop_reduced_dims(const Tensor& kept, std::uint64_t mask);

// out = a @ b over broadcast batch dims; a: [..., m, k], b: [..., k, n], both rank >= 2.
// With `addend` (broadcastable to the product's shape), addend + a @ b: the product is
// accumulated onto a copy of the addend, in one pass over the output.
Tensor matmul(const Tensor& a, const Tensor& b, const char* name, const Tensor& addend = Tensor());

}  // namespace normgrad::autograd::primitive
