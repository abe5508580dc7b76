#include "nn/lstm.h"

#include "autograd/functions/recurrent_sequence.h"
#include "autograd/ops.h"
#include "base/error.h"
#include "profiler/recorder.h"

namespace normgrad::nn {

LstmCell::LstmCell(std::int64_t input_size, std::int64_t hidden_size, RecurrentCellOptions options,
                   Generator& generator)
    : RecurrentCell(input_size, hidden_size, 4, options, generator) {
  input_norm_ = add_norm("input_norm", 4 * hidden_size);
  state_norm_ = add_norm("state_norm", 4 * hidden_size);
  cell_norm_ = add_norm("cell_norm", hidden_size);
}

Tensor LstmCell::input_side(const Tensor& x) { return input_norm_->forward(project_input(x)); }

std::vector<Tensor> LstmCell::step(const Tensor& input_side, const std::vector<Tensor>& state,
                                   const Tensor& mask, const Tensor& state_dropout) {
  NG_CHECK(state.size() == 2, type_name(), "expects the state {h, c}, got ", state.size(),
           " tensors");
  const Tensor& h = state[0];
  const Tensor& c = state[1];
  const std::int64_t hidden = hidden_size();
  const Tensor projection = project_state(h, state_dropout);
  if (options().fused)
    if (const auto norms = fused_norms()) {
      const auto [h_new, c_new] = normgrad::lstm_step(input_side, projection, h, c, *norms, mask);
      return {h_new, c_new};
    }
  const Tensor gates = input_side + state_norm_->forward(projection);
  const Tensor c_new = options().fused ? normgrad::lstm_cell_state(gates, c, mask)
                                       : normgrad::lstm_cell_state_composed(gates, c, mask);
  const Tensor output_gate = sigmoid(gates.narrow(1, 3 * hidden, hidden));
  Tensor h_new = output_gate * tanh(cell_norm_->forward(c_new));
  if (mask.defined()) h_new = where(ne(mask.detach(), 0.0).unsqueeze(1), h_new, h);
  return {h_new, c_new};
}

std::optional<std::vector<Tensor>> LstmCell::run_sequence(const Tensor& input_side,
                                                          const std::vector<Tensor>& initial,
                                                          const normgrad::SequenceOptions& run) {
  if (!options().fused) return std::nullopt;
  const auto norms = fused_norms();
  if (!norms) return std::nullopt;  // BatchNorm: the step by step path
  NG_CHECK(initial.size() == 2, type_name(), "expects the state {h, c}, got ", initial.size(),
           " tensors");
  const Tensor states = normgrad::lstm_sequence(input_side, initial[0], initial[1], weight_hh(),
                                                bias_hh, *norms, run);
  const std::vector<Tensor> halves = split(states, hidden_size(), 2);  // h, c
  return halves;
}

std::optional<normgrad::LstmStepNorms> LstmCell::fused_norms() const {
  if (!norm_spec().normalises_outputs()) return normgrad::LstmStepNorms{};
  std::optional<RowNorm> state = state_norm_->row_form(), cell = cell_norm_->row_form();
  if (!state || !cell) return std::nullopt;
  return normgrad::LstmStepNorms{std::move(state), std::move(cell)};
}

LstmState LstmCell::forward(const Tensor& x, const LstmState& previous, const Tensor& mask) {
  const profiler::ModuleSpan span(this, "LstmCell");

  NG_CHECK(x.defined() && x.dim() == 2, type_name(), "x must be [batch, ", input_size(), "], got ",
           x.defined() ? x.shape() : Shape{});
  const std::vector<Tensor> state = step(input_side(x), {previous.hidden, previous.cell}, mask);
  return {state[0], state[1]};
}

Lstm::Lstm(std::int64_t input_size, std::int64_t hidden_size, RecurrentOptions options,
           Generator& generator)
    : Recurrent(
          [&] {
            return std::make_shared<LstmCell>(input_size, hidden_size, options.cell, generator);
          },
          options) {}

}  // namespace normgrad::nn
