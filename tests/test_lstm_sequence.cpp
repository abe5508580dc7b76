// An LSTM direction's whole loop as one op (lstm_sequence): against the step by
// step path it replaces (the state-side product, then the fused step), states bit for bit and
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
using testing::leaf;
using testing::lstm_norms;
using testing::Variant;
using testing::variants;
using testing::with_affine;

namespace {

// The path lstm_sequence replaces: per step, linear (addmm onto b_hh) and the fused step.
Tensor step_by_step(const Tensor& input_side, const Tensor& h0, const Tensor& c0,
                    const Tensor& weight, const Tensor& bias, const LstmStepNorms& norms,
                    const Tensor& mask, const Tensor& dropout, bool reverse) {
  const std::int64_t steps = input_side.size(0);
  std::vector<Tensor> states(static_cast<std::size_t>(steps));
  Tensor h = h0, c = c0;
  for (std::int64_t i = 0; i < steps; ++i) {
    const std::int64_t t = reverse ? steps - 1 - i : i;
    const Tensor gh = nn::functional::linear(dropout.defined() ? h * dropout : h, weight, bias);
    const Tensor m = mask.defined() ? mask.select(0, t) : Tensor();
    const auto [h_new, c_new] =
        lstm_step(input_side.select(0, t), gh, h, c, norms, m);
    h = h_new;
    c = c_new;
    states[static_cast<std::size_t>(t)] = cat({h, c}, 1);
  }
  return stack(states, 0);
}

}  // namespace

TEST_CASE("lstm_sequence: the step by step path's states bit for bit, its gradients to rounding") {
  const std::int64_t steps = testing::setting_steps, batch = testing::setting_batch, hidden = 4;
  std::vector<std::optional<Variant>> norm_kinds = {std::nullopt};
  for (const Variant& variant : variants) norm_kinds.push_back(variant);
  for (const auto& variant : norm_kinds) {
    for (const testing::SequenceSetting& setting : testing::sequence_settings) {
      for (const DType dtype : {DType::Float32, DType::Float64}) {
        INFO((variant ? variant->name : "no norm") << ", " << setting.name << ", " << dtype);
        Generator generator(5);
        const auto make = [&](const Shape& shape, double scale) {
          return (randn(shape, generator, {.dtype = dtype}) * scale).detach().requires_grad_();
        };
        const Tensor x = make({steps, batch, 4 * hidden}, 1.0);
        const Tensor h0 = make({batch, hidden}, 0.5), c0 = make({batch, hidden}, 0.5);
        const Tensor w = make({4 * hidden, hidden}, 0.6);
        const Tensor b = setting.bias ? make({4 * hidden}, 0.3) : Tensor();
        const Tensor mask = testing::setting_mask(setting, dtype);
        const Tensor dropout =
            setting.dropout
                ? nn::functional::dropout_mask({batch, hidden}, 0.4, generator, {.dtype = dtype})
                : Tensor();
        const LstmStepNorms norms = variant ? lstm_norms(*variant, hidden, dtype) : LstmStepNorms{};
        std::vector<Tensor> inputs = {x, h0, c0, w};
        if (b.defined()) inputs.push_back(b);
        for (const Tensor& t : affine_of(norms)) inputs.push_back(t);
        const Tensor dy = randn({steps, batch, 2 * hidden}, generator, {.dtype = dtype});

        const Tensor fused = lstm_sequence(
            x, h0, c0, w, b, norms, testing::setting_options(setting, mask, dropout));
        testing::check_against_steps(
            fused,
            [&] { return step_by_step(x, h0, c0, w, b, norms, mask, dropout, setting.reverse); },
            inputs, dy, setting.packed);
      }
    }
  }
}

TEST_CASE("lstm_sequence passes gradcheck: inputs, states, weights, bias, gains and norm biases") {
  const std::int64_t steps = 3, batch = 2, hidden = 3;
  const Tensor mask = tensor({{1, 1}, {1, 0}, {0, 1}}, {.dtype = DType::Float64});
  Generator generator(9);
  const Tensor dropout =
      nn::functional::dropout_mask({batch, hidden}, 0.3, generator, {.dtype = DType::Float64});
  for (const bool reverse : {false, true}) {
    INFO("reverse " << reverse);
    std::vector<Tensor> inputs = {leaf({steps, batch, 4 * hidden}, 1),
                                  leaf({batch, hidden}, 2, 0.5), leaf({batch, hidden}, 3, 0.5),
                                  leaf({4 * hidden, hidden}, 4, 0.6), leaf({4 * hidden}, 5, 0.3)};
    CHECK_GRADIENTS(
        [&](const std::vector<Tensor>& in) {
          return lstm_sequence(
              in[0], in[1], in[2], in[3], in[4], {},
              {.mask = mask, .state_dropout = dropout, .reverse = reverse});
        },
        inputs);
    const LstmStepNorms norms = lstm_norms(variants[0], hidden, DType::Float64);  // LayerNorm
    for (const Tensor& t : affine_of(norms)) inputs.push_back(t);
    CHECK_GRADIENTS(
        [&](const std::vector<Tensor>& in) {
          return lstm_sequence(in[0], in[1], in[2], in[3], in[4],
                                               with_affine(norms, in, 5),
                                               {.mask = mask, .reverse = reverse});
        },
        inputs);
    // Packed: the second step runs one row and the third none.
    CHECK_GRADIENTS(
        [&](const std::vector<Tensor>& in) {
          return lstm_sequence(
              in[0], in[1], in[2], in[3], in[4], with_affine(norms, in, 5),
              {.batch_sizes = {2, 1, 0}, .state_dropout = dropout, .reverse = reverse});
        },
        inputs);
  }
}

TEST_CASE(
    "LSTM layers run their fused loops as one op: the stepped layer's values, masked or "
    "packed") {
  // Unsorted lengths, a tie, an empty sequence and a full one.
  const Tensor lengths = tensor({2, 5, 0, 3, 5}, {.dtype = DType::Int64});
  Generator generator(13);
  const Tensor dropout =
      nn::functional::dropout_mask({2, 5, 4}, 0.3, generator, {.dtype = DType::Float64});
  for (const std::string norm : {"none", "rmsnorm", "layernorm"}) {
    for (const bool packed : {false, true}) {
      for (const bool batch_first : {false, true}) {
        INFO(norm << (packed ? ", packed" : ", masked")
                  << (batch_first ? ", batch first" : ", time major"));
        const nn::RecurrentOptions options{.cell = {.norm = norm, .dtype = DType::Float64},
                                           .bidirectional = true,
                                           .batch_first = batch_first};
        nn::Recurrent one_op = testing::layer_of<nn::LstmCell>(options);
        nn::Recurrent stepped = testing::layer_of<testing::SteppedCell<nn::LstmCell>>(options);
        const Tensor x = leaf({5, 5, 3}, 14), h0 = leaf({2, 5, 4}, 15, 0.5),
                     c0 = leaf({2, 5, 4}, 16, 0.5);
        const Tensor mask = nn::sequence_mask(lengths, 5, batch_first, DType::Float64);
        testing::check_layers_agree(one_op, stepped,
                                    [&](nn::Recurrent& layer) {
                                      const nn::RecurrentOutput out =
                                          packed
                                              ? layer.forward_lengths(x, lengths, h0, c0, dropout)
                                              : layer.forward(x, mask, h0, c0, dropout);
                                      return std::vector<Tensor>{out.output, out.hidden, out.cell};
                                    },
                                    {x, h0, c0});
      }
    }
  }
}

TEST_CASE("lstm_sequence: errors name the op and the shapes") {
  const Tensor x = randn({2, 3, 16}), h0 = randn({3, 4}), c0 = randn({3, 4});
  const Tensor w = randn({16, 4}), b = randn({16});
  CHECK_ERROR(lstm_sequence(randn({2, 3, 12}), h0, c0, w, b, {}), "lstm_sequence",
              "input_side", "[2, 3, 12]");
  CHECK_ERROR(lstm_sequence(x, h0, randn({3, 5}), w, b, {}), "lstm_sequence", "c0",
              "[3, 5]");
  CHECK_ERROR(lstm_sequence(x, h0, Tensor(), w, b, {}), "lstm_sequence", "c0");
  CHECK_ERROR(lstm_sequence(x, h0, c0, randn({12, 4}), b, {}), "lstm_sequence",
              "weight_hh", "[12, 4]");
  CHECK_ERROR(lstm_sequence(x, h0, c0, w, randn({12}), {}), "lstm_sequence",
              "bias_hh", "[12]");
  CHECK_ERROR(lstm_sequence(x, h0, c0, w, b, {}, {.mask = randn({3, 2})}),
              "lstm_sequence", "mask", "[3, 2]");
  CHECK_ERROR(lstm_sequence(x, h0, c0, w, b, {}, {.batch_sizes = {3, 4}}),
              "lstm_sequence", "batch_sizes[1]", "got 4");
  CHECK_ERROR(lstm_sequence(
                  x, h0, c0, w, b, {.state = std::nullopt, .cell = RowNorm{.gain = ones({5})}}),
              "lstm_sequence", "the cell norm's gain", "[5]");
  CHECK_ERROR(lstm_sequence(x, h0, c0.to(DType::Float64), w, b, {}),
              "lstm_sequence", "float64");
}
