#pragma once
// Launchers of pool.cu. Max and average pooling, forward and backward; the backward passes gather
// per input pixel, so they need no atomics. Each takes what the Backend method of the same name
// takes (backends/backend.h documents the contract), after the device's Context; it queues its
// kernels on context.stream.

#include "backends/backend.h"
#include "backends/cuda/context.h"

namespace normgrad::backend::cuda {

void max_pool2d(const Context& context, const TensorRef& out, const TensorRef& indices,
                const TensorRef& in, const Window2d& window);
void max_pool2d_backward(const Context& context, const TensorRef& dx, const TensorRef& dy,
                         const TensorRef& indices);
void avg_pool2d(const Context& context, const TensorRef& out, const TensorRef& in,
                const Window2d& window);
void avg_pool2d_backward(const Context& context, const TensorRef& dx, const TensorRef& dy,
                         const Window2d& window);

}  // namespace normgrad::backend::cuda
