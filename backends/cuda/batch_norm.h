#pragma once
// Launchers of batch_norm.cu. BatchNorm over [N, C, S]: per-channel statistics in double from fixed
// blocks combined in a fixed order, forward, and backward. Each takes what the Backend method of
// the same name takes (backends/backend.h documents the contract), after the device's Context; it
// queues its kernels on context.stream.

#include "backends/backend.h"
#include "backends/cuda/context.h"

namespace normgrad::backend::cuda {

void batch_norm_statistics(const Context& context, const TensorRef& mean, const TensorRef& variance,
                           const TensorRef& rstd, const TensorRef& x, double eps);
void batch_norm_forward(const Context& context, const TensorRef& y, const TensorRef& x,
                        const TensorRef& mean, const TensorRef& rstd, const TensorRef* gain,
                        const TensorRef* bias);
void batch_norm_backward(const Context& context, const TensorRef& dx, const TensorRef* dgain,
                         const TensorRef* dbias, const TensorRef& dy, const TensorRef& x,
                         const TensorRef& mean, const TensorRef& rstd, const TensorRef* gain,
                         bool batch_statistics);

}  // namespace normgrad::backend::cuda
