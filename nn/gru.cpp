#include "nn/gru.h"

#include "autograd/functions/recurrent_sequence.h"
#include "autograd/ops.h"
#include "base/error.h"
#include "profiler/recorder.h"

namespace normgrad::nn {

GruCell::GruCell(std::int64_t input_size, std::int64_t hidden_size, RecurrentCellOptions options,
                 Generator& generator)
    : RecurrentCell(input_size, hidden_size, 3, options, generator) {
  input_gates_norm_ = add_norm("input_gates_norm", 2 * hidden_size);
  state_gates_norm_ = add_norm("state_gates_norm", 2 * hidden_size);
  input_candidate_norm_ = add_norm("input_candidate_norm", hidden_size);
  state_candidate_norm_ = add_norm("state_candidate_norm", hidden_size);
}

Tensor GruCell::normalise(const Tensor& projection, Norm& gates, Norm& candidate) const {
  if (!norm_spec().normalises_outputs()) return projection;
  const std::int64_t hidden = hidden_size();
  const std::vector<Tensor> parts = split(projection, {2 * hidden, hidden}, -1);
  return cat({gates.forward(parts[0]), candidate.forward(parts[1])}, -1);
}

Tensor GruCell::input_side(const Tensor& x) {
  return normalise(project_input(x), *input_gates_norm_, *input_candidate_norm_);
}

std::vector<Tensor> GruCell::step(const Tensor& input_side, const std::vector<Tensor>& state,
                                  const Tensor& mask, const Tensor& state_dropout) {
  NG_CHECK(state.size() == 1, type_name(), "expects one state tensor, got ", state.size());
  const Tensor& h = state[0];
  const Tensor projection = project_state(h, state_dropout);
  if (options().fused && norm_spec().normalises_outputs())
    if (const auto norms = fused_state_norms())
      return {normgrad::normed_gru_step(input_side, projection, h, *norms, mask)};
  const Tensor gh = normalise(projection, *state_gates_norm_, *state_candidate_norm_);
  if (options().fused) return {normgrad::gru_step(input_side, gh, h, mask)};
  return {normgrad::gru_step_composed(input_side, gh, h, mask)};
}

std::optional<std::vector<Tensor>> GruCell::run_sequence(const Tensor& input_side,
                                                         const std::vector<Tensor>& initial,
                                                         const normgrad::SequenceOptions& run) {
  if (!options().fused) return std::nullopt;
  std::optional<normgrad::GruStateNorms> norms;
  if (norm_spec().normalises_outputs()) {
    norms = fused_state_norms();
    if (!norms) return std::nullopt;  // BatchNorm: the step by step path
  }
  NG_CHECK(initial.size() == 1, type_name(), "has one state, got ", initial.size());
  return std::vector<Tensor>{
      normgrad::gru_sequence(input_side, initial[0], weight_hh(), bias_hh, norms, run)};
}

std::optional<normgrad::GruStateNorms> GruCell::fused_state_norms() const {
  std::optional<RowNorm> gates = state_gates_norm_->row_form();
  std::optional<RowNorm> candidate = state_candidate_norm_->row_form();
  if (!gates || !candidate) return std::nullopt;
  return normgrad::GruStateNorms{std::move(*gates), std::move(*candidate)};
}

Tensor GruCell::forward(const Tensor& x, const Tensor& h_prev, const Tensor& mask) {
  const profiler::ModuleSpan span(this, "GruCell");

  NG_CHECK(x.defined() && x.dim() == 2, type_name(), "x must be [batch, ", input_size(), "], got ",
           x.defined() ? x.shape() : Shape{});
  return step(input_side(x), {h_prev}, mask)[0];
}

Gru::Gru(std::int64_t input_size, std::int64_t hidden_size, RecurrentOptions options,
         Generator& generator)
    : Recurrent(
          [&] {
            return std::make_shared<GruCell>(input_size, hidden_size, options.cell, generator);
          },
          options) {}

}  // namespace normgrad::nn
