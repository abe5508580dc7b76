#pragma once
// The pointwise halves of GRU and LSTM time steps, as differentiable ops. Each is one fused
// backend kernel forward and one backward (backends/backend.h gives the formulas), with a
// composed twin built from tensor ops that the tests hold it to.
//
// `mask` is optional: [B], any dtype, nonzero for the rows that take this step. A row whose
// mask is 0 keeps its previous state exactly, which is how padded steps of shorter sequences
// leave a recurrent layer's state unchanged.

#include <array>
#include <optional>

#include "autograd/functions/norm.h"
#include "core/tensor.h"

namespace normgrad {

// One GRU step in the form of Nematus (paper, Appendix A.1), after the pre-activations have been
// computed and normalised. gx, gh: [B, 3H], the input-side and state-side terms of
// [reset r | update u | candidate c]; h_prev: [B, H]. Returns
//   r = sigmoid(gx_r + gh_r),  u = sigmoid(gx_u + gh_u),  c = tanh(gx_c + r gh_c),
//   h = u h_prev + (1 - u) c.
// The reset gate multiplies the state-side term after its norm, as Nematus has it. Without
// norms this is exactly PyTorch's GRU cell (whose b_hn sits inside gh).
Tensor gru_step(const Tensor& gx, const Tensor& gh, const Tensor& h_prev,
                const Tensor& mask = Tensor());
Tensor gru_step_composed(const Tensor& gx, const Tensor& gh, const Tensor& h_prev,
                         const Tensor& mask = Tensor());

// The norms of a GRU step's state side (paper, App. A.1): `gates` over the [reset | update]
// block of gh (2H values a row) and `candidate` over its candidate block (H values), as a GRU
// cell's state_gates_norm and state_candidate_norm give them (Norm::row_form).
struct GruStateNorms {
  RowNorm gates, candidate;
};

// gru_step with the state side's norms fused into it: gh [B, 3H] is the state-side projection
// before its norms, and the step is
//   gru_step(gx, [gates(gh_r, gh_u) | candidate(gh_c)], h_prev, mask),
// with gradients for gx, gh, h_prev and the norms' gains and biases. One backend kernel forward
// and one backward (a column sum for the gains beside it on a GPU), where the composed step
// takes a split, two norms, a cat and the gate kernel each way.
Tensor normed_gru_step(const Tensor& gx, const Tensor& gh, const Tensor& h_prev,
                       const GruStateNorms& norms, const Tensor& mask = Tensor());
// Its composed twin: split, row_norm of each block, cat, gru_step_composed.
Tensor normed_gru_step_composed(const Tensor& gx, const Tensor& gh, const Tensor& h_prev,
                                const GruStateNorms& norms, const Tensor& mask = Tensor());

// The norms of an LSTM step (paper, App. A.2): `state` over the 4H state-side pre-activations
// and `cell` over the H cell values, as an LSTM cell's state_norm and cell_norm give them
// (Norm::row_form); either may be left out.
struct LstmStepNorms {
  std::optional<RowNorm> state, cell;
};

// A whole LSTM step after the state side's GEMM: gx [B, 4H] the (normalised) input side, gh
// [B, 4H] the raw state-side projection, [i | f | g | o] in PyTorch's order:
//   a = gx + state(gh),  c = sigmoid(a_f) c_prev + sigmoid(a_i) tanh(a_g),
//   h = sigmoid(a_o) tanh(cell(c)),
// rows whose mask is 0 keeping h_prev and c_prev. Returns {h, c}, two views of one [B, 2H]
// tensor. One backend kernel forward and one backward (a column sum for the gains beside it on a
// GPU), with gradients for every input and the norms' gains and biases.
std::array<Tensor, 2> lstm_step(const Tensor& gx, const Tensor& gh, const Tensor& h_prev,
                                const Tensor& c_prev, const LstmStepNorms& norms,
                                const Tensor& mask = Tensor());
// Its composed twin: row_norm, lstm_cell_state_composed, sigmoid, tanh and where.
std::array<Tensor, 2> lstm_step_composed(const Tensor& gx, const Tensor& gh, const Tensor& h_prev,
                                         const Tensor& c_prev, const LstmStepNorms& norms,
                                         const Tensor& mask = Tensor());

// An LSTM's new cell state: gates [B, 4H] holds the pre-activations [i | f | g | o] in
// PyTorch's order, c_prev [B, H]. Returns c = sigmoid(f) c_prev + sigmoid(i) tanh(g); o is the
// output gate, applied after the cell's norm (h = sigmoid(o) tanh(norm(c))), and gets no
// gradient from here.
Tensor lstm_cell_state(const Tensor& gates, const Tensor& c_prev, const Tensor& mask = Tensor());
Tensor lstm_cell_state_composed(const Tensor& gates, const Tensor& c_prev,
                                const Tensor& mask = Tensor());

}  // namespace normgrad
