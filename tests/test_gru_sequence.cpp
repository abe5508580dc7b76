// A GRU direction's whole loop as one op (gru_sequence): against the step by
// step path it replaces (the state-side product, then the fused step), values bit for bit and
// gradients to rounding, for no norm and every row norm, with masks, packed batch sizes, state
// dropout, either direction and without b_hh; float64 gradient checks of every input; the
// layers that take it, with masks and with lengths; and its errors.

#include <optional>
#include <string>
#include <vector>

#include "module_gradcheck.h"
#include "sequence_settings.h"
#include "state_norm_variants.h"

using namespace normgrad;
using testing::affine_of;
using testing::all_close;
using testing::leaf;
using testing::state_norms;
using testing::Variant;
using testing::variants;
using testing::with_affine;

namespace {

// The path gru_sequence replaces: per step, linear (addmm onto b_hh) and the fused step.
Tensor step_by_step(const Tensor& input_side, const Tensor& h0, const Tensor& weight,
                    const Tensor& bias, const std::optional<GruStateNorms>& norms,
                    const Tensor& mask, const Tensor& dropout, bool reverse) {
  const std::int64_t steps = input_side.size(0);
  std::vector<Tensor> states(static_cast<std::size_t>(steps));
  Tensor h = h0;
  for (std::int64_t i = 0; i < steps; ++i) {
    const std::int64_t t = reverse ? steps - 1 - i : i;
    const Tensor gh = nn::functional::linear(dropout.defined() ? h * dropout : h, weight, bias);
    const Tensor m = mask.defined() ? mask.select(0, t) : Tensor();
    h = norms ? normed_gru_step(input_side.select(0, t), gh, h, *norms, m)
              : gru_step(input_side.select(0, t), gh, h, m);
    states[static_cast<std::size_t>(t)] = h;
  }
  return stack(states, 0);
}

}  // namespace

TEST_CASE("gru_sequence: the step by step path's values bit for bit, its gradients to rounding") {
  const std::int64_t steps = testing::setting_steps, batch = testing::setting_batch, hidden = 4;
  std::vector<std::optional<Variant>> norm_kinds = {std::nullopt};
  for (const Variant& variant : variants) norm_kinds.push_back(variant);
  for (const auto& variant : norm_kinds) {
    for (const testing::SequenceSetting& setting : testing::sequence_settings) {
      for (const DType dtype : {DType::Float32, DType::Float64}) {
        INFO((variant ? variant->name : "no norm") << ", " << setting.name << ", " << dtype);
        Generator generator(4);
        const auto make = [&](const Shape& shape, double scale) {
          return (randn(shape, generator, {.dtype = dtype}) * scale).detach().requires_grad_();
        };
        const Tensor x = make({steps, batch, 3 * hidden}, 1.0);
        const Tensor h0 = make({batch, hidden}, 0.5);
        const Tensor w = make({3 * hidden, hidden}, 0.6);
        const Tensor b = setting.bias ? make({3 * hidden}, 0.3) : Tensor();
        const Tensor mask = testing::setting_mask(setting, dtype);
        const Tensor dropout =
            setting.dropout
                ? nn::functional::dropout_mask({batch, hidden}, 0.4, generator, {.dtype = dtype})
                : Tensor();
        std::optional<GruStateNorms> norms;
        if (variant) norms = state_norms(*variant, hidden, dtype);
        std::vector<Tensor> inputs = {x, h0, w};
        if (b.defined()) inputs.push_back(b);
        if (norms)
          for (const Tensor& t : affine_of(*norms)) inputs.push_back(t);
        const Tensor dy = randn({steps, batch, hidden}, generator, {.dtype = dtype});

        const Tensor fused = gru_sequence(
            x, h0, w, b, norms, testing::setting_options(setting, mask, dropout));
        testing::check_against_steps(
            fused, [&] { return step_by_step(x, h0, w, b, norms, mask, dropout, setting.reverse); },
            inputs, dy, setting.packed);
      }
    }
  }
}

TEST_CASE("gru_sequence passes gradcheck: inputs, state, weights, bias, gains and norm biases") {
  const std::int64_t steps = 3, batch = 2, hidden = 3;
  const Tensor mask = tensor({{1, 1}, {1, 0}, {0, 1}}, {.dtype = DType::Float64});
  Generator generator(9);
  const Tensor dropout =
      nn::functional::dropout_mask({batch, hidden}, 0.3, generator, {.dtype = DType::Float64});
  for (const bool reverse : {false, true}) {
    INFO("reverse " << reverse);
    std::vector<Tensor> inputs = {leaf({steps, batch, 3 * hidden}, 1),
                                  leaf({batch, hidden}, 2, 0.5), leaf({3 * hidden, hidden}, 3, 0.6),
                                  leaf({3 * hidden}, 4, 0.3)};
    CHECK_GRADIENTS(
        [&](const std::vector<Tensor>& in) {
          return gru_sequence(
              in[0], in[1], in[2], in[3], std::nullopt,
              {.mask = mask, .state_dropout = dropout, .reverse = reverse});
        },
        inputs);
    const GruStateNorms norms = state_norms(variants[0], hidden, DType::Float64);  // LayerNorm
    for (const Tensor& t : affine_of(norms)) inputs.push_back(t);
    CHECK_GRADIENTS(
        [&](const std::vector<Tensor>& in) {
          return gru_sequence(in[0], in[1], in[2], in[3], with_affine(norms, in, 4),
                                              {.mask = mask, .reverse = reverse});
        },
        inputs);
    // Packed: the second step runs one row and the third none.
    CHECK_GRADIENTS(
        [&](const std::vector<Tensor>& in) {
          return gru_sequence(
              in[0], in[1], in[2], in[3], with_affine(norms, in, 4),
              {.batch_sizes = {2, 1, 0}, .state_dropout = dropout, .reverse = reverse});
        },
        inputs);
  }
}

TEST_CASE("GRU layers run their fused loops as one op: the cell's steps' values, bit for bit") {
  Generator generator(10);
  const Tensor x = randn({4, 3, 5}, generator);
  const Tensor mask = tensor({{1, 1, 1}, {1, 1, 0}, {1, 0, 0}, {1, 0, 0}});
  for (const std::string norm : {"none", "rmsnorm", "layernorm"}) {
    for (const bool bidirectional : {false, true}) {
      INFO(norm << ", bidirectional " << bidirectional);
      Generator init(3);
      nn::Gru gru(5, 6, {.cell = {.norm = norm}, .bidirectional = bidirectional}, init);
      const nn::RecurrentOutput out = gru.forward(x, mask);
      // The same layer stepped by hand through each direction's cell.
      std::vector<Tensor> directions;
      std::vector<Tensor> finals;
      for (std::int64_t d = 0; d < (bidirectional ? 2 : 1); ++d) {
        auto& cell = static_cast<nn::GruCell&>(gru.cell(d));
        const Tensor side = cell.input_side(x);
        std::vector<Tensor> states(4);
        Tensor h = zeros({3, 6});
        for (std::int64_t i = 0; i < 4; ++i) {
          const std::int64_t t = d == 0 ? i : 3 - i;
          h = cell.step(side.select(0, t), {h}, mask.select(0, t))[0];
          states[static_cast<std::size_t>(t)] = h;
        }
        directions.push_back(stack(states, 0));
        finals.push_back(h);
      }
      const Tensor expected = cat(directions, -1) * mask.unsqueeze(-1);
      CHECK(all_close(out.output, expected, 0, 0));
      CHECK(all_close(out.hidden, stack(finals, 0), 0, 0));
    }
  }
}

TEST_CASE("gru_sequence: errors name the op and the shapes") {
  const Tensor x = randn({2, 3, 12}), h0 = randn({3, 4}), w = randn({12, 4}), b = randn({12});
  CHECK_ERROR(gru_sequence(randn({2, 3, 11}), h0, w, b, std::nullopt),
              "gru_sequence", "input_side", "[2, 3, 11]");
  CHECK_ERROR(gru_sequence(x, h0, randn({12, 5}), b, std::nullopt), "gru_sequence",
              "weight_hh", "[12, 5]");
  CHECK_ERROR(gru_sequence(x, h0, w, randn({11}), std::nullopt), "gru_sequence",
              "bias_hh", "[11]");
  CHECK_ERROR(gru_sequence(x, h0, w, b, std::nullopt, {.mask = randn({3, 2})}),
              "gru_sequence", "mask", "[3, 2]");
  CHECK_ERROR(
      gru_sequence(x, h0, w, b, std::nullopt, {.state_dropout = randn({3, 5})}),
      "gru_sequence", "state_dropout", "[3, 5]");
  CHECK_ERROR(gru_sequence(x, h0, w, b, std::nullopt, {.batch_sizes = {3}}),
              "gru_sequence", "batch_sizes", "one count per step (2)", "got 1");
  CHECK_ERROR(gru_sequence(x, h0, w, b, std::nullopt, {.batch_sizes = {3, 4}}),
              "gru_sequence", "batch_sizes[1]", "[0, 3]", "got 4");
  CHECK_ERROR(gru_sequence(x, h0, w, b, std::nullopt, {.batch_sizes = {3, -1}}),
              "gru_sequence", "batch_sizes[1]", "got -1");
  CHECK_ERROR(gru_sequence(x, h0, w, b, std::nullopt,
                                           {.mask = ones({2, 3}), .batch_sizes = {3, 3}}),
              "gru_sequence", "mask or batch_sizes, not both");
  CHECK_ERROR(gru_sequence(randn({0, 3, 12}), h0, w, b, std::nullopt),
              "gru_sequence", "steps > 0");
  CHECK_ERROR(gru_sequence(x, h0.to(DType::Float64), w, b, std::nullopt),
              "gru_sequence", "float64");
}

TEST_CASE("forward_lengths runs a fused GRU's loops packed as one op: the packed steps' values") {
  // Unsorted lengths, a tie, an empty sequence and a full one.
  const Tensor lengths = tensor({2, 5, 0, 3, 5}, {.dtype = DType::Int64});
  Generator generator(13);
  const Tensor dropout =
      nn::functional::dropout_mask({2, 5, 4}, 0.3, generator, {.dtype = DType::Float64});
  for (const std::string norm : {"none", "rmsnorm", "layernorm"}) {
    for (const bool batch_first : {false, true}) {
      INFO(norm << (batch_first ? ", batch first" : ", time major"));
      const nn::RecurrentOptions options{.cell = {.norm = norm, .dtype = DType::Float64},
                                         .bidirectional = true,
                                         .batch_first = batch_first};
      nn::Recurrent one_op = testing::layer_of<nn::GruCell>(options);
      nn::Recurrent stepped = testing::layer_of<testing::SteppedCell<nn::GruCell>>(options);
      const Tensor x = leaf({5, 5, 3}, 14), h0 = leaf({2, 5, 4}, 15, 0.5);
      testing::check_layers_agree(one_op, stepped,
                                  [&](nn::Recurrent& layer) {
                                    const nn::RecurrentOutput out =
                                        layer.forward_lengths(x, lengths, h0, Tensor(), dropout);
                                    return std::vector<Tensor>{out.output, out.hidden};
                                  },
                                  {x, h0});
    }
  }
}
