#pragma once
// LSTM with three norm slots, as the paper's attentive reader has it (its App. A.2, after the
// LayerNorm paper's Eq. 20-22):
//   [i, f, g, o] = N1(W_ih x + b_ih) + N2(W_hh h + b_hh)
//   c' = sigmoid(f) c + sigmoid(i) tanh(g)
//   h' = sigmoid(o) tanh(N3(c'))
// N1 and N2 normalise the 4H pre-activations as one vector each, N3 the H cell values. Gate
// order and parameter shapes are PyTorch's (W_ih [4H, input], W_hh [4H, H]), so with norm
// "none" this is PyTorch's LSTM.
//
// A fused step (normgrad::lstm_step) does everything after the state side's GEMM in one
// kernel, N2 and N3 included, for every norm with a row form (LayerNorm, RMSNorm, pRMSNorm,
// L2Norm) and for none; BatchNorm and options.fused = false go through the norm modules. A
// layer runs a fused cell's whole loop in a direction as one op (normgrad::lstm_sequence).
//
//   nn::Lstm reader(240, 240, {.cell = {.norm = "rmsnorm"}, .bidirectional = true});
//   nn::RecurrentOutput out = reader.forward_lengths(x, lengths);  // out.hidden, out.cell

#include <memory>
#include <optional>

#include "nn/recurrent.h"
#include "autograd/functions/recurrent.h"

namespace normgrad::nn {

struct LstmState {
  Tensor hidden;  // [B, H]
  Tensor cell;    // [B, H]
};

class LstmCell : public RecurrentCell {
 public:
  LstmCell(std::int64_t input_size, std::int64_t hidden_size, RecurrentCellOptions options = {},
           Generator& generator = default_generator());
  std::string type_name() const override { return "LstmCell"; }

  // One step: x [B, input], the previous state, mask undefined or [B].
  LstmState forward(const Tensor& x, const LstmState& previous, const Tensor& mask = Tensor());

  Tensor input_side(const Tensor& x) override;
  std::vector<Tensor> step(const Tensor& input_side, const std::vector<Tensor>& state,
                           const Tensor& mask, const Tensor& state_dropout = Tensor()) override;
  std::size_t state_count() const override { return 2; }
  // The fused path's whole loop as one op (normgrad::lstm_sequence): the steps' states bit
  // for bit, W_hh's gradient as one product over all steps.
  std::optional<std::vector<Tensor>> run_sequence(const Tensor& input_side,
                                                  const std::vector<Tensor>& initial,
                                                  const normgrad::SequenceOptions& run) override;

 private:
  // The state and cell norms in the form the fused step takes (none for a spec without output
  // norms); nullopt where either has no row form (BatchNorm).
  std::optional<normgrad::LstmStepNorms> fused_norms() const;

  std::shared_ptr<Norm> input_norm_, state_norm_, cell_norm_;
};

// An LSTM layer over time (recurrent.h), uni- or bidirectional.
class Lstm : public Recurrent {
 public:
  Lstm(std::int64_t input_size, std::int64_t hidden_size, RecurrentOptions options = {},
       Generator& generator = default_generator());
  std::string type_name() const override { return "LSTM"; }
};

}  // namespace normgrad::nn
