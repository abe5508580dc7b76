#pragma once
// Launchers of softmax.cu. Softmax and log-softmax along one dim, and their backward.
// Each takes what the Backend method of the same name takes (backends/backend.h documents
// the contract), after the device's Context; it queues its kernels on context.stream.

#include "backends/backend.h"
#include "backends/cuda/context.h"

namespace normgrad::backend::cuda {

void softmax(const Context& context, const TensorRef& out, const TensorRef& in, int dim, bool log);
void softmax_backward(const Context& context, const TensorRef& dx, const TensorRef& dy,
                      const TensorRef& y, int dim, bool log);

}  // namespace normgrad::backend::cuda
