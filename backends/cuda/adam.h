#pragma once
// Launchers of adam.cu. The fused Adam/AdamW update: one pass over each parameter.
// Each takes what the Backend method of the same name takes (backends/backend.h documents
// the contract), after the device's Context; it queues its kernels on context.stream.

#include "backends/backend.h"
#include "backends/cuda/context.h"

namespace normgrad::backend::cuda {

void adam_update(const Context& context, const AdamParams& params, const TensorRef& weight,
                 const TensorRef& grad, const TensorRef& exp_avg, const TensorRef& exp_avg_sq);

}  // namespace normgrad::backend::cuda
