#pragma once
// Launchers of reduce.cu. Reductions (sum, max, min, argmax, argmin) over any set of dims, in a
// fixed order: the same inputs give bit-identical results on every run. Each takes what the Backend
// method of the same name takes (backends/backend.h documents the contract), after the device's
// Context; it queues its kernels on context.stream.

#include "backends/backend.h"
#include "backends/cuda/context.h"

namespace normgrad::backend::cuda {

void reduce(const Context& context, ReduceOp op, const TensorRef& out, const TensorRef& in,
            std::uint64_t reduced, double scale);

}  // namespace normgrad::backend::cuda
