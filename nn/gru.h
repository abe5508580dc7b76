#pragma once
// GRU with four norm slots, in the form of Nematus (paper, Appendix A.1):
//   [r, u] = sigmoid( N1(W_g x + b_g) + N2(U_g h + c_g) )
//   h~     = tanh( N3(W_c x + b_c) + r * N4(U_c h + c_c) )
//   h'     = u h + (1 - u) h~
// N1 and N2 normalise the 2H gate pre-activations as one vector each, N3 and N4 the H
// candidate ones; the reset gate multiplies the state-side candidate term after its norm.
// W_ih = [W_g; W_c] is [3H, input] and W_hh = [U_g; U_c] is [3H, H], rows in PyTorch's order
// (reset, update, candidate), so with norm "none" this is PyTorch's GRU: same parameters, same
// results.
//
// With norms that have a row form (LayerNorm, RMSNorm, pRMSNorm, L2Norm: Norm::row_form), a
// fused step applies N2 and N4 inside its kernel (normgrad::normed_gru_step); the others
// (BatchNorm) and options.fused = false go through the norm modules and the composed step.
//
//   nn::GruCell cell(256, 512, {.norm = "layernorm"});
//   Tensor h = cell.forward(x, h_prev);            // x [B, 256], h_prev [B, 512]
//   nn::Gru gru(256, 512, {.cell = {.norm = "rmsnorm"}, .batch_first = true});
//   nn::RecurrentOutput out = gru.forward(x_seq);  // x_seq [B, T, 256]

#include <memory>
#include <optional>

#include "nn/recurrent.h"
#include "autograd/functions/recurrent.h"

namespace normgrad::nn {

class GruCell : public RecurrentCell {
 public:
  GruCell(std::int64_t input_size, std::int64_t hidden_size, RecurrentCellOptions options = {},
          Generator& generator = default_generator());
  std::string type_name() const override { return "GruCell"; }

  // One step: x [B, input], h_prev [B, H], mask undefined or [B] -> h [B, H].
  Tensor forward(const Tensor& x, const Tensor& h_prev, const Tensor& mask = Tensor());

  Tensor input_side(const Tensor& x) override;
  std::vector<Tensor> step(const Tensor& input_side, const std::vector<Tensor>& state,
                           const Tensor& mask, const Tensor& state_dropout = Tensor()) override;
  std::size_t state_count() const override { return 1; }
  // The fused path's whole loop as one op (normgrad::gru_sequence): the step's outputs bit
  // for bit, W_hh's gradient as one product over all steps.
  std::optional<std::vector<Tensor>> run_sequence(const Tensor& input_side,
                                                  const std::vector<Tensor>& initial,
                                                  const normgrad::SequenceOptions& run) override;

 private:
  // [gates (2H) | candidate (H)] with N_gates on the first part and N_candidate on the second.
  Tensor normalise(const Tensor& projection, Norm& gates, Norm& candidate) const;
  // N2 and N4 in the form the fused normed step takes; nullopt where either has no row form.
  std::optional<normgrad::GruStateNorms> fused_state_norms() const;

  std::shared_ptr<Norm> input_gates_norm_, state_gates_norm_;
  std::shared_ptr<Norm> input_candidate_norm_, state_candidate_norm_;
};

// A GRU layer over time (recurrent.h), uni- or bidirectional.
class Gru : public Recurrent {
 public:
  Gru(std::int64_t input_size, std::int64_t hidden_size, RecurrentOptions options = {},
      Generator& generator = default_generator());
  std::string type_name() const override { return "GRU"; }
};

}  // namespace normgrad::nn
