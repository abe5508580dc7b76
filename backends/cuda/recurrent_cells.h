#pragma once
// Launchers of recurrent_cells.cu. The pointwise parts of a GRU step and of an LSTM cell state,
// fused, forward and backward. Each takes what the Backend method of the same name takes
// (backends/backend.h documents the contract), after the device's Context; it queues its kernels on
// context.stream.

#include "backends/backend.h"
#include "backends/cuda/context.h"

namespace normgrad::backend::cuda {

void gru_cell_forward(const Context& context, const TensorRef& h, const TensorRef& activations,
                      const TensorRef& gx, const TensorRef& gh, const TensorRef& h_prev,
                      const TensorRef* mask);
void gru_cell_backward(const Context& context, const TensorRef& dgx, const TensorRef& dgh,
                       const TensorRef& dh_prev, const TensorRef& dh, const TensorRef& activations,
                       const TensorRef& gh, const TensorRef& h_prev, const TensorRef* mask);
void lstm_cell_forward(const Context& context, const TensorRef& c, const TensorRef& activations,
                       const TensorRef& gates, const TensorRef& c_prev, const TensorRef* mask);
void lstm_cell_backward(const Context& context, const TensorRef& dgates, const TensorRef& dc_prev,
                        const TensorRef& dc, const TensorRef& activations, const TensorRef& c_prev,
                        const TensorRef* mask);

}  // namespace normgrad::backend::cuda
