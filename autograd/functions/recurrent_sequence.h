#pragma once
// A recurrent layer's whole time loop in one direction as one differentiable op, the form
// cuDNN's RNN has, for the GRU (gru_sequence) and the LSTM (lstm_sequence). Both run on one
// loop (recurrent_sequence.cpp); a cell gives it its gate width, its state's parts and its two
// fused step kernels (recurrent.h: gru_step, normed_gru_step, lstm_step).
//
// Forward runs each step's state-side product and the cell's fused step kernel. Backward runs
// the steps in reverse and then forms the gradient of W_hh as ONE matrix product over all the
// rows the steps computed,
//   dW_hh = sum over t of dgh_t^T (what W_hh read at step t),
// and b_hh's as one column sum. Step by step through autograd, that gradient is T thin
// products (B rows each) added up one by one; here it is a single product with T times the
// depth, and the T additions are gone.
//
// The states are those of the per-step path bit for bit (the same kernels on the same values
// in the same order). The gradients equal it to rounding: the sums over steps run in another
// order.
//
// Rows that skip a step keep their state through it, whether a mask or packed batch sizes say
// so. Packed, a step computes only the rows it runs, so padding costs nothing; a mask runs
// every row at every step and keeps the old state where it is 0.

#include <cstdint>
#include <optional>
#include <vector>

#include "autograd/functions/recurrent.h"
#include "core/tensor.h"

namespace normgrad {

// How the loop runs: which rows take each step, the dropout on the state W_hh reads, and the
// direction.
struct SequenceOptions {
  // Undefined, or [T, B], any dtype: rows where it is 0 keep their state at that step.
  Tensor mask{};
  // Empty, or T counts (each in [0, B]): step t runs the rows [0, batch_sizes[t]) only and
  // the others keep their state, as a mask of that many leading ones would say, with only
  // those rows computed. With rows sorted longest first, as PyTorch's packed sequences have
  // them, batch_sizes[t] is the number of sequences longer than t. Not together with mask.
  std::vector<std::int64_t> batch_sizes{};
  // Undefined, or [B, H]: multiplies h where W_hh reads it at every step (variational
  // dropout); the state carried on is not masked.
  Tensor state_dropout{};
  bool reverse = false;  // run t = T-1 down to 0
};

// input_side [T, B, 3H]: every step's (normalised) input-side pre-activations; h0 [B, H];
// weight_hh [3H, H] and bias_hh [3H] (or undefined); norms: the state side's two norms
// (normed_gru_step), or nullopt for none. Returns the state after every step, [T, B, H], in
// time order; a row that skips a step holds its previous state there. A bfloat16 input takes
// float32 weights, gains and biases (autograd/mixed_precision.h).
Tensor gru_sequence(const Tensor& input_side, const Tensor& h0, const Tensor& weight_hh,
                    const Tensor& bias_hh, const std::optional<GruStateNorms>& norms,
                    const SequenceOptions& options = {});

// input_side [T, B, 4H]: every step's (normalised) input-side pre-activations [i | f | g | o];
// h0, c0 [B, H]; weight_hh [4H, H] and bias_hh [4H] (or undefined); norms: the state and cell
// norms of lstm_step, either left out. Returns [T, B, 2H]: [h | c] after every step, in time
// order; a row that skips a step holds its previous h and c there. A bfloat16 input takes
// float32 weights, gains and biases.
Tensor lstm_sequence(const Tensor& input_side, const Tensor& h0, const Tensor& c0,
                     const Tensor& weight_hh, const Tensor& bias_hh, const LstmStepNorms& norms,
                     const SequenceOptions& options = {});

}  // namespace normgrad
