#pragma once
// Launchers of normed_gru_cell.cu: a GRU step with its state side's two norms fused into it,
// forward and backward. Each takes what the Backend method of the same name takes
// (backends/backend.h documents the contract), after the device's Context; it queues its
// kernels on context.stream.

#include "backends/backend.h"
#include "backends/cuda/context.h"

namespace normgrad::backend::cuda {

void normed_gru_cell_forward(const Context& context, const GruStateNorms& norms, const TensorRef& h,
                             const TensorRef& activations, const TensorRef& normalised,
                             const TensorRef& statistics, const TensorRef& gx, const TensorRef& gh,
                             const TensorRef& h_prev, const TensorRef* mask);
void normed_gru_cell_backward(const Context& context, const GruStateNorms& norms,
                              const TensorRef& dgx, const TensorRef& dgh, const TensorRef& dh_prev,
                              const GruStateNormGrads& affine, const TensorRef& dh,
                              const TensorRef& activations, const TensorRef& normalised,
                              const TensorRef& statistics, const TensorRef& gh,
                              const TensorRef& h_prev, const TensorRef* mask);

}  // namespace normgrad::backend::cuda
