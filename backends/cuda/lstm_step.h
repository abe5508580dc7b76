#pragma once
// Launchers of lstm_step.cu: an LSTM step after its GEMM with its norms fused in, forward and
// backward. Each takes what the Backend method of the same name takes (backends/backend.h
// documents the contract), after the device's Context; it queues its kernels on
// context.stream.

#include "backends/backend.h"
#include "backends/cuda/context.h"

namespace normgrad::backend::cuda {

void lstm_step_forward(const Context& context, const LstmStepNorms& norms, const TensorRef& state,
                       const TensorRef& activations, const TensorRef& cell,
                       const TensorRef& statistics, const TensorRef& gx, const TensorRef& gh,
                       const TensorRef& h_prev, const TensorRef& c_prev, const TensorRef* mask);
void lstm_step_backward(const Context& context, const LstmStepNorms& norms, const TensorRef& dgx,
                        const TensorRef& dgh, const TensorRef& dh_prev, const TensorRef& dc_prev,
                        const LstmStepNormGrads& affine, const TensorRef& dstate,
                        const TensorRef& state, const TensorRef& activations, const TensorRef& cell,
                        const TensorRef& statistics, const TensorRef& gh, const TensorRef& c_prev,
                        const TensorRef* mask);

}  // namespace normgrad::backend::cuda
