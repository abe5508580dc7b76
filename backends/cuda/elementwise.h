#pragma once
// Launchers of elementwise.cu. Filling, copying and elementwise ops: fill, arange, strided copy
// with dtype conversion, unary and binary ops with broadcasting (stride-0 dims), and where. Each
// takes what the Backend method of the same name takes (backends/backend.h documents the contract),
// after the device's Context; it queues its kernels on context.stream.

#include "backends/backend.h"
#include "backends/cuda/context.h"

namespace normgrad::backend::cuda {

void fill(const Context& context, const TensorRef& out, double value);
void arange(const Context& context, const TensorRef& out, double start, double step);
void copy(const Context& context, const TensorRef& dst, const TensorRef& src);
void unary(const Context& context, UnaryOp op, const TensorRef& out, const TensorRef& in,
           double alpha, double beta);
void binary(const Context& context, BinaryOp op, const TensorRef& out, const TensorRef& a,
            const TensorRef& b, double alpha);
void where(const Context& context, const TensorRef& out, const TensorRef& cond, const TensorRef& a,
           const TensorRef& b);

}  // namespace normgrad::backend::cuda
