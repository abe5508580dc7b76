#pragma once
// A GRU layer's whole time loop in one direction as one differentiable op, the form cuDNN's RNN
// has: forward runs each step's state-side product and its fused step kernel (plain, or with
// the state-side norms inside: normgrad::gru_step, normed_gru_step); backward runs the steps
// in reverse and then forms the gradient of W_hh as ONE matrix product over all T B rows,
// dW_hh = sum over t of dgh_t^T h_{t-1}, and b_hh's as one column sum. Step by step through
// autograd, that gradient is T thin products (B rows each) added up one by one; here it is a
// single product with T times the depth, and the T additions are gone.
//
// The outputs are those of the per-step path bit for bit (the same kernels on the same values
// in the same order). The gradients equal it to rounding: the sums over steps run in another
// order. Packed (SequenceOptions::batch_sizes), each step computes only its running rows, as
// the per-step path of Recurrent::forward_lengths does, and dW_hh is still one product, over
// the rows the steps computed.

#include <optional>

#include "core/tensor.h"
#include "autograd/functions/recurrent.h"
#include "autograd/functions/recurrent_sequence_options.h"

namespace normgrad {

// input_side [T, B, 3H]: every step's (normalised) input-side pre-activations; h0 [B, H];
// weight_hh [3H, H] and bias_hh [3H] (or undefined); norms: the state side's N2 and N4, or
// nullopt for none; options: a mask or packed batch sizes, state dropout and the direction
// (sequence_options.h). Returns the state after every step, [T, B, H], in time order; a row
// that skips a step holds its previous state there. A bfloat16 input takes float32 weights,
// gains and biases (autograd/mixed_precision.h).
Tensor gru_sequence(const Tensor& input_side, const Tensor& h0, const Tensor& weight_hh,
                    const Tensor& bias_hh, const std::optional<GruStateNorms>& norms,
                    const SequenceOptions& options = {});

}  // namespace normgrad
