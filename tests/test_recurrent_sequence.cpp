// A recurrent direction's whole loop as one op (gru_sequence, lstm_sequence), every case run
// over both cells: against the step by step path it replaces (the state-side product, then the
// fused step), states bit for bit and gradients to rounding, for no norm and every row norm,
// with masks, packed batch sizes, state dropout, either direction and without b_hh; float64
// gradient checks of every input; the layers that take it, masked and packed; its errors; and on
// a GPU, the layers' loops against the CPU's, packed, with state dropout, both directions.

#include <array>
#include <cstdint>
#include <iterator>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "module_gradcheck.h"
#include "recurrent_parity.h"
#include "state_norm_variants.h"

using namespace normgrad;
using testing::leaf;
using testing::Variant;
using testing::variants;

namespace {

// ---- The two cells, as the cases see them ----------------------------------------------------

struct Gru {
  static constexpr const char* op = "gru_sequence";
  static constexpr std::int64_t gates = 3, parts = 1;
  using Norms = std::optional<GruStateNorms>;
  using Cell = nn::GruCell;

  static Norms norms(const Variant& variant, std::int64_t hidden, DType dtype) {
    return testing::state_norms(variant, hidden, dtype);
  }
  static std::vector<Tensor> affine_of(const Norms& norms) {
    return norms ? testing::affine_of(*norms) : std::vector<Tensor>{};
  }
  static Norms with_affine(const Norms& norms, const std::vector<Tensor>& in, std::size_t first) {
    return testing::with_affine(*norms, in, first);
  }
  // start: [h0]
  static Tensor one_op(const Tensor& x, const std::vector<Tensor>& start, const Tensor& w,
                       const Tensor& b, const Norms& norms, const SequenceOptions& options) {
    return gru_sequence(x, start[0], w, b, norms, options);
  }
  // One step of the path the op replaces; returns the step's output [h].
  static Tensor step(const Tensor& gx, const Tensor& gh, std::vector<Tensor>& state,
                     const Norms& norms, const Tensor& mask) {
    state[0] =
        norms ? normed_gru_step(gx, gh, state[0], *norms, mask) : gru_step(gx, gh, state[0], mask);
    return state[0];
  }
};

struct Lstm {
  static constexpr const char* op = "lstm_sequence";
  static constexpr std::int64_t gates = 4, parts = 2;
  using Norms = LstmStepNorms;
  using Cell = nn::LstmCell;

  static Norms norms(const Variant& variant, std::int64_t hidden, DType dtype) {
    return testing::lstm_norms(variant, hidden, dtype);
  }
  static std::vector<Tensor> affine_of(const Norms& norms) { return testing::affine_of(norms); }
  static Norms with_affine(const Norms& norms, const std::vector<Tensor>& in, std::size_t first) {
    return testing::with_affine(norms, in, first);
  }
  // start: [h0, c0]
  static Tensor one_op(const Tensor& x, const std::vector<Tensor>& start, const Tensor& w,
                       const Tensor& b, const Norms& norms, const SequenceOptions& options) {
    return lstm_sequence(x, start[0], start[1], w, b, norms, options);
  }
  // One step of the path the op replaces; returns the step's output [h | c].
  static Tensor step(const Tensor& gx, const Tensor& gh, std::vector<Tensor>& state,
                     const Norms& norms, const Tensor& mask) {
    const std::array<Tensor, 2> next = lstm_step(gx, gh, state[0], state[1], norms, mask);
    state = {next[0], next[1]};
    return cat({state[0], state[1]}, 1);
  }
};

// ---- The settings every norm runs under ------------------------------------------------------

struct Setting {
  std::string name;
  bool masked = false, dropout = false, reverse = false, bias = true, packed = false;
};

const std::vector<Setting> settings = {
    {"plain"},
    {"masked", true},
    {"state dropout", false, true},
    {"reversed and masked", true, false, true},
    {"without b_hh, reversed, with dropout", false, true, true, false},
    {"packed", false, false, false, true, true},
    {"packed, reversed, with dropout", false, true, true, true, true},
};

// The settings' sizes: 5 steps of 3 rows, and packed batch sizes for them, one step running
// no row.
constexpr std::int64_t setting_steps = 5, setting_batch = 3;
const std::vector<std::int64_t> packed_sizes = {3, 2, 2, 0, 1};

// A setting's mask for the step-by-step path: its own, the mask of each step's first
// packed_sizes[t] rows, or none.
Tensor setting_mask(const Setting& setting, DType dtype) {
  if (setting.masked)
    return tensor({{1, 1, 1}, {1, 0, 1}, {1, 0, 1}, {0, 0, 1}, {0, 0, 1}}, {.dtype = dtype});
  if (!setting.packed) return Tensor();
  std::vector<double> values;
  for (const std::int64_t count : packed_sizes)
    for (std::int64_t row = 0; row < setting_batch; ++row) values.push_back(row < count ? 1 : 0);
  return from_vector(values, {std::ssize(packed_sizes), setting_batch}).to(dtype);
}

// The path the op replaces: per step, linear (addmm onto b_hh) and the fused step.
template <class Kind>
Tensor step_by_step(const Tensor& x, std::vector<Tensor> state, const Tensor& w, const Tensor& b,
                    const typename Kind::Norms& norms, const Tensor& mask, const Tensor& dropout,
                    bool reverse) {
  const std::int64_t steps = x.size(0);
  std::vector<Tensor> outputs(static_cast<std::size_t>(steps));
  for (std::int64_t i = 0; i < steps; ++i) {
    const std::int64_t t = reverse ? steps - 1 - i : i;
    const Tensor h = state[0];
    const Tensor gh = nn::functional::linear(dropout.defined() ? h * dropout : h, w, b);
    outputs[static_cast<std::size_t>(t)] =
        Kind::step(x.select(0, t), gh, state, norms, mask.defined() ? mask.select(0, t) : Tensor());
  }
  return stack(outputs, 0);
}

// A cell that never runs its loop as one op: a layer of it steps, masked or packed.
template <class Cell> class SteppedCell : public Cell {
 public:
  using Cell::Cell;
  std::optional<std::vector<Tensor>> run_sequence(const Tensor&, const std::vector<Tensor>&,
                                                  const SequenceOptions&) override {
    return std::nullopt;
  }
};

// A layer of `Cell`s from 3 inputs to 4 units, its parameters drawn from a generator seeded
// alike for every layer.
template <class Cell> nn::Recurrent layer_of(const nn::RecurrentOptions& options) {
  auto generator = std::make_shared<Generator>(12);
  return nn::Recurrent([=] { return std::make_shared<Cell>(3, 4, options.cell, *generator); },
                       options);
}

}  // namespace

// The names the templated cases carry: "<Gru>", "<Lstm>".
TYPE_TO_STRING(Gru);
TYPE_TO_STRING(Lstm);

TEST_CASE_TEMPLATE(
    "recurrent sequences: the step by step path's states bit for bit, its "
    "gradients to rounding",
    Kind, Gru, Lstm) {
  const std::int64_t steps = setting_steps, batch = setting_batch, hidden = 4;
  std::vector<std::optional<Variant>> norm_kinds = {std::nullopt};
  for (const Variant& variant : variants) norm_kinds.push_back(variant);
  for (const auto& variant : norm_kinds) {
    for (const Setting& setting : settings) {
      for (const DType dtype : {DType::Float32, DType::Float64}) {
        INFO(Kind::op << ", " << (variant ? variant->name : "no norm") << ", " << setting.name
                      << ", " << dtype);
        Generator generator(4);
        const auto make = [&](const Shape& shape, double scale) {
          return (randn(shape, generator, {.dtype = dtype}) * scale).detach().requires_grad_();
        };
        const Tensor x = make({steps, batch, Kind::gates * hidden}, 1.0);
        std::vector<Tensor> start;
        for (std::int64_t p = 0; p < Kind::parts; ++p) start.push_back(make({batch, hidden}, 0.5));
        const Tensor w = make({Kind::gates * hidden, hidden}, 0.6);
        const Tensor b = setting.bias ? make({Kind::gates * hidden}, 0.3) : Tensor();
        const Tensor mask = setting_mask(setting, dtype);
        const Tensor dropout =
            setting.dropout
                ? nn::functional::dropout_mask({batch, hidden}, 0.4, generator, {.dtype = dtype})
                : Tensor();
        typename Kind::Norms norms{};
        if (variant) norms = Kind::norms(*variant, hidden, dtype);
        std::vector<Tensor> inputs = {x};
        inputs.insert(inputs.end(), start.begin(), start.end());
        inputs.push_back(w);
        if (b.defined()) inputs.push_back(b);
        for (const Tensor& t : Kind::affine_of(norms)) inputs.push_back(t);
        const Tensor dy = randn({steps, batch, Kind::parts * hidden}, generator, {.dtype = dtype});

        const Tensor one_op = Kind::one_op(
            x, start, w, b, norms,
            {.mask = setting.packed ? Tensor() : mask,
             .batch_sizes = setting.packed ? packed_sizes : std::vector<std::int64_t>{},
             .state_dropout = dropout,
             .reverse = setting.reverse});
        one_op.backward(dy);
        std::vector<Tensor> one_op_grads;
        for (Tensor t : inputs) {
          one_op_grads.push_back(t.grad());
          t.zero_grad();
        }
        const Tensor stepped =
            step_by_step<Kind>(x, start, w, b, norms, mask, dropout, setting.reverse);
        stepped.backward(dy);
        // The states are equal bit for bit (to rounding when packed: a step's product is then
        // over its running rows, a GEMM of another height, which a BLAS may block otherwise);
        // the gradients to rounding, as the sums over steps (W_hh's, b_hh's, the gains' and
        // every dh) run in another order.
        const double tolerance = dtype == DType::Float32 ? 1e-5 : 1e-13;
        const double value_tolerance = setting.packed ? tolerance : 0;
        CHECK(testing::all_close(one_op, stepped, value_tolerance, value_tolerance));
        for (std::size_t i = 0; i < inputs.size(); ++i) {
          INFO("gradient of input " << i);
          REQUIRE(one_op_grads[i].defined());
          CHECK(testing::all_close(one_op_grads[i], inputs[i].grad(), tolerance, tolerance));
        }
      }
    }
  }
}

TEST_CASE_TEMPLATE(
    "recurrent sequences pass gradcheck: inputs, states, weights, bias, gains and "
    "norm biases",
    Kind, Gru, Lstm) {
  const std::int64_t steps = 3, batch = 2, hidden = 3;
  const Tensor mask = tensor({{1, 1}, {1, 0}, {0, 1}}, {.dtype = DType::Float64});
  Generator generator(9);
  const Tensor dropout =
      nn::functional::dropout_mask({batch, hidden}, 0.3, generator, {.dtype = DType::Float64});
  constexpr std::size_t parts = Kind::parts, weight = parts + 1, first_gain = parts + 3;
  // in: [x, the start's parts, w, b, the gains and biases]
  const auto run = [&](const std::vector<Tensor>& in, const typename Kind::Norms& norms,
                       const SequenceOptions& options) {
    const std::vector<Tensor> start(in.begin() + 1, in.begin() + 1 + parts);
    return Kind::one_op(in[0], start, in[weight], in[weight + 1], norms, options);
  };
  for (const bool reverse : {false, true}) {
    INFO(Kind::op << ", reverse " << reverse);
    std::vector<Tensor> inputs = {leaf({steps, batch, Kind::gates * hidden}, 1)};
    for (std::size_t p = 0; p < parts; ++p) inputs.push_back(leaf({batch, hidden}, 2 + p, 0.5));
    inputs.push_back(leaf({Kind::gates * hidden, hidden}, 4, 0.6));
    inputs.push_back(leaf({Kind::gates * hidden}, 5, 0.3));
    CHECK_GRADIENTS(
        [&](const std::vector<Tensor>& in) {
          return run(in, {}, {.mask = mask, .state_dropout = dropout, .reverse = reverse});
        },
        inputs);
    const typename Kind::Norms norms =
        Kind::norms(variants[0], hidden, DType::Float64);  // LayerNorm
    for (const Tensor& t : Kind::affine_of(norms)) inputs.push_back(t);
    CHECK_GRADIENTS(
        [&](const std::vector<Tensor>& in) {
          return run(in, Kind::with_affine(norms, in, first_gain),
                     {.mask = mask, .reverse = reverse});
        },
        inputs);
    // Packed: the second step runs one row and the third none.
    CHECK_GRADIENTS(
        [&](const std::vector<Tensor>& in) {
          return run(in, Kind::with_affine(norms, in, first_gain),
                     {.batch_sizes = {2, 1, 0}, .state_dropout = dropout, .reverse = reverse});
        },
        inputs);
  }
}

TEST_CASE_TEMPLATE(
    "recurrent layers run their fused loops as one op: the stepped layer's values, "
    "masked or packed",
    Kind, Gru, Lstm) {
  // Unsorted lengths, a tie, an empty sequence and a full one.
  const Tensor lengths = tensor({2, 5, 0, 3, 5}, {.dtype = DType::Int64});
  Generator generator(13);
  const Tensor dropout =
      nn::functional::dropout_mask({2, 5, 4}, 0.3, generator, {.dtype = DType::Float64});
  for (const std::string norm : {"none", "rmsnorm", "layernorm"}) {
    for (const bool packed : {false, true}) {
      for (const bool batch_first : {false, true}) {
        INFO(Kind::op << ", " << norm << (packed ? ", packed" : ", masked")
                      << (batch_first ? ", batch first" : ", time major"));
        const nn::RecurrentOptions options{.cell = {.norm = norm, .dtype = DType::Float64},
                                           .bidirectional = true,
                                           .batch_first = batch_first};
        nn::Recurrent one_op = layer_of<typename Kind::Cell>(options);
        nn::Recurrent stepped = layer_of<SteppedCell<typename Kind::Cell>>(options);
        const Tensor x = leaf({5, 5, 3}, 14), h0 = leaf({2, 5, 4}, 15, 0.5);
        const Tensor c0 = Kind::parts == 2 ? leaf({2, 5, 4}, 16, 0.5) : Tensor();
        const Tensor mask = nn::sequence_mask(lengths, 5, batch_first, DType::Float64);
        const auto run = [&](nn::Recurrent& layer) {
          const nn::RecurrentOutput out = packed
                                              ? layer.forward_lengths(x, lengths, h0, c0, dropout)
                                              : layer.forward(x, mask, h0, c0, dropout);
          std::vector<Tensor> outputs = {out.output, out.hidden};
          if (out.cell.defined()) outputs.push_back(out.cell);
          return outputs;
        };
        // The outputs bit for bit; the gradients of the inputs and of every parameter from one
        // weighted sum of the outputs, to rounding.
        const std::vector<Tensor> a = run(one_op), b = run(stepped);
        REQUIRE(a.size() == b.size());
        for (std::size_t i = 0; i < a.size(); ++i) CHECK(testing::all_close(a[i], b[i], 0, 0));
        std::vector<Tensor> inputs = {x, h0};
        if (c0.defined()) inputs.push_back(c0);
        std::vector<Tensor> weights;
        for (std::size_t i = 0; i < a.size(); ++i)
          weights.push_back(leaf(a[i].shape(), 17 + i).detach());
        const auto gradients = [&](nn::Recurrent& layer, const std::vector<Tensor>& outputs) {
          for (Tensor t : inputs) t.zero_grad();
          Tensor loss = zeros({}, {.dtype = DType::Float64});
          for (std::size_t i = 0; i < outputs.size(); ++i)
            loss = loss + sum(outputs[i] * weights[i]);
          loss.backward();
          std::vector<Tensor> grads;
          for (const Tensor& t : inputs) grads.push_back(t.grad().clone());
          for (const Tensor& parameter : layer.parameters()) grads.push_back(parameter.grad());
          return grads;
        };
        const std::vector<Tensor> from_one_op = gradients(one_op, a),
                                  from_stepped = gradients(stepped, b);
        REQUIRE(from_one_op.size() == from_stepped.size());
        for (std::size_t i = 0; i < from_one_op.size(); ++i) {
          INFO("gradient " << i);
          CHECK(testing::all_close(from_one_op[i], from_stepped[i], 1e-13, 1e-13));
        }
      }
    }
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
      CHECK(testing::all_close(out.output, expected, 0, 0));
      CHECK(testing::all_close(out.hidden, stack(finals, 0), 0, 0));
    }
  }
}

TEST_CASE_TEMPLATE("recurrent sequences: errors name the op and the shapes", Kind, Gru, Lstm) {
  const std::int64_t width = Kind::gates * 4;  // hidden 4
  const Tensor x = randn({2, 3, width}), w = randn({width, 4}), b = randn({width});
  std::vector<Tensor> start;
  for (std::int64_t p = 0; p < Kind::parts; ++p) start.push_back(randn({3, 4}));
  const auto run = [&](const Tensor& x_in, const std::vector<Tensor>& start_in, const Tensor& w_in,
                       const Tensor& b_in, const SequenceOptions& options = {}) {
    return Kind::one_op(x_in, start_in, w_in, b_in, {}, options);
  };
  const char* op = Kind::op;
  const std::string bad_x = "[2, 3, " + std::to_string(width - 1) + "]";
  const std::string bad_b = "[" + std::to_string(width - 1) + "]";
  const std::string bad_w = "[" + std::to_string(width) + ", 5]";
  CHECK_ERROR(run(randn({2, 3, width - 1}), start, w, b), op, "input_side", bad_x.c_str());
  CHECK_ERROR(run(x, start, randn({width, 5}), b), op, "weight_hh", bad_w.c_str());
  CHECK_ERROR(run(x, start, w, randn({width - 1})), op, "bias_hh", bad_b.c_str());
  CHECK_ERROR(run(x, start, w, b, {.mask = randn({3, 2})}), op, "mask", "[3, 2]");
  CHECK_ERROR(run(x, start, w, b, {.state_dropout = randn({3, 5})}), op, "state_dropout", "[3, 5]");
  CHECK_ERROR(run(x, start, w, b, {.batch_sizes = {3}}), op, "batch_sizes",
              "one count per step (2)", "got 1");
  CHECK_ERROR(run(x, start, w, b, {.batch_sizes = {3, 4}}), op, "batch_sizes[1]", "[0, 3]",
              "got 4");
  CHECK_ERROR(run(x, start, w, b, {.batch_sizes = {3, -1}}), op, "batch_sizes[1]", "got -1");
  CHECK_ERROR(run(x, start, w, b, {.mask = ones({2, 3}), .batch_sizes = {3, 3}}), op,
              "mask or batch_sizes, not both");
  CHECK_ERROR(run(randn({0, 3, width}), start, w, b), op, "steps > 0");
  std::vector<Tensor> float64_start = start;
  float64_start.back() = start.back().to(DType::Float64);
  CHECK_ERROR(run(x, float64_start, w, b), op, "float64");
}

TEST_CASE("lstm_sequence: errors name c0 and the cell norm") {
  const Tensor x = randn({2, 3, 16}), h0 = randn({3, 4}), c0 = randn({3, 4});
  const Tensor w = randn({16, 4}), b = randn({16});
  CHECK_ERROR(lstm_sequence(x, h0, randn({3, 5}), w, b, {}), "lstm_sequence", "c0", "[3, 5]");
  CHECK_ERROR(lstm_sequence(x, h0, Tensor(), w, b, {}), "lstm_sequence", "c0");
  CHECK_ERROR(
      lstm_sequence(x, h0, c0, w, b, {.state = std::nullopt, .cell = RowNorm{.gain = ones({5})}}),
      "lstm_sequence", "the cell norm's gain", "[5]");
}

// ---- on a GPU: CPU against CUDA ----------------------------------------------------------------

// The loops on the GPU against the CPU's, values and gradients, within testing::layer_tolerance.

using testing::Inputs;
using testing::layer_tolerance;
using testing::normal;
using testing::parity_layer;

TEST_CASE(
    "cuda parity: GRU and LSTM loops as one op, packed, with state dropout, both directions") {
  SKIP_PARITY_WITHOUT_CUDA();
  // Unsorted lengths, one of them 0: every step runs a prefix of the sorted rows.
  const Tensor lengths = tensor({5, 2, 0, 4}, {.dtype = DType::Int64});
  for (const DType dtype : {DType::Float32, DType::Float64}) {
    for (const std::string norm : {"none", "layernorm", "rmsnorm"}) {
      for (const bool lstm : {false, true}) {
        INFO((lstm ? "LSTM" : "GRU") << ", norm " << norm << ", " << dtype);
        const std::shared_ptr<nn::Recurrent> layer = parity_layer(lstm, norm, true, dtype);
        nn::Recurrent& recurrent = *layer;
        Generator generator(16);
        const Tensor dropout =
            nn::functional::dropout_mask({2, 4, 8}, 0.3, generator, {.dtype = dtype});
        Inputs inputs{normal({5, 4, 6}, 17, dtype), lengths, normal({2, 4, 8}, 18, dtype, 0.5)};
        if (lstm) inputs.push_back(normal({2, 4, 8}, 19, dtype, 0.5));
        CHECK_NO_MISMATCH(testing::module_parity_mismatch(
            recurrent,
            [&](const Inputs& in) {
              const nn::RecurrentOutput out =
                  recurrent.forward_lengths(in[0], in[1], in[2], lstm ? in[3] : Tensor(),
                                            testing::on_device_of(dropout, in[0]));
              std::vector<Tensor> parts{out.output.flatten(), out.hidden.flatten()};
              if (lstm) parts.push_back(out.cell.flatten());
              return cat(parts);
            },
            inputs, layer_tolerance(dtype, 5), layer_tolerance(dtype, 5)));
      }
    }
  }
}
