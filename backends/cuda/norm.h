#pragma once
// Launchers of norm.cu. The fused LayerNorm / RMSNorm / pRMSNorm / L2Norm over rows, forward and a
// one-pass backward. dgain and dbias come from per-block partial sums finished by a small
// reduction, never float atomics, so they are bit-identical run to run. One warp per row for short
// rows, a block per row for long ones. Each takes what the Backend method of the same name takes
// (backends/backend.h documents the contract), after the device's Context; it queues its kernels on
// context.stream.

#include "backends/backend.h"
#include "backends/cuda/context.h"

namespace normgrad::backend::cuda {

void norm_forward(const Context& context, const NormParams& params, const TensorRef& y,
                  const TensorRef& mean, const TensorRef& rstd, const TensorRef& x,
                  const TensorRef* gain, const TensorRef* bias);
void norm_backward(const Context& context, const NormParams& params, const TensorRef& dx,
                   const TensorRef* dgain, const TensorRef* dbias, const TensorRef& dy,
                   const TensorRef& x, const TensorRef& mean, const TensorRef& rstd,
                   const TensorRef* gain);

}  // namespace normgrad::backend::cuda
