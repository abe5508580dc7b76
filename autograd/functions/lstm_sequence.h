#pragma once
// An LSTM layer's whole time loop in one direction as one differentiable op, as
// gru_sequence.h has the GRU's: forward runs each step's state-side product and the fused step
// kernel with its norms (normgrad::lstm_step); backward runs the steps in reverse and then
// forms W_hh's gradient as ONE matrix product over all the rows the steps computed, and b_hh's
// as one column sum, where stepping through autograd makes T thin products and T additions.
//
// The states are those of the per-step path bit for bit (the same kernels on the same values
// in the same order); the gradients equal it to rounding (the sums over steps run in another
// order). Packed (SequenceOptions::batch_sizes), each step computes only its running rows.

#include "core/tensor.h"
#include "autograd/functions/recurrent.h"
#include "autograd/functions/recurrent_sequence_options.h"

namespace normgrad {

// input_side [T, B, 4H]: every step's (normalised) input-side pre-activations [i | f | g | o];
// h0, c0 [B, H]; weight_hh [4H, H] and bias_hh [4H] (or undefined); norms: the state and cell
// norms of lstm_step, either left out; options: a mask or packed batch sizes, state dropout and
// the direction (sequence_options.h). Returns [T, B, 2H]: [h | c] after every step, in time
// order; a row that skips a step holds its previous h and c there. A bfloat16 input takes
// float32 weights, gains and biases (autograd/mixed_precision.h).
Tensor lstm_sequence(const Tensor& input_side, const Tensor& h0, const Tensor& c0,
                     const Tensor& weight_hh, const Tensor& bias_hh, const LstmStepNorms& norms,
                     const SequenceOptions& options = {});

}  // namespace normgrad
