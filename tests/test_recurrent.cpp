// GRU and LSTM: the fused step kernels against their composed twins (gru_step, lstm_cell_state,
// normed_gru_step with the GRU's state norms, lstm_step with the LSTM's norms) for every row norm,
// with and without a mask, in float32 and float64; float64 gradient checks of every input and of
// the norms' gains and biases; gradient checks through several time steps for every norm, padding
// that leaves states unchanged, the layouts and directions, unbind's one-buffer backward, state
// dropout, the cells that take the fused steps, and errors for bad input; on a GPU, the CUDA
// kernels against the CPU's: the steps with and without a mask, the normed steps for every row
// norm at widths below and above a block, and the layers for every norm slot choice, both
// directions, a padding mask and lengths, with input, initial-state and parameter gradients;
// and bfloat16: step kernels that are the float32 ones, rounded once, the fused steps through
// autograd on the rounded inputs, and the layers in mixed precision, on the CPU and against a
// GPU. The loops as one op are in test_recurrent_sequence.cpp.

#include <algorithm>
#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "bfloat16_checks.h"
#include "bfloat16_twins.h"
#include "module_gradcheck.h"
#include "recurrent_parity.h"
#include "state_norm_variants.h"

using namespace normgrad;
using testing::affine_of;
using testing::all_close;
using testing::leaf;
using testing::lstm_norms;
using testing::state_norms;
using testing::Variant;
using testing::variants;
using testing::with_affine;

namespace {

constexpr DType f64 = DType::Float64;

// [B] mask with row 1 skipping the step.
Tensor step_mask(DType dtype = f64) { return tensor({1, 0, 1}, {.dtype = dtype}); }

// A fused cell's parameters got the gradients its composed twin's did, name by name.
void check_same_parameter_grads(const nn::Module& fused, const nn::Module& composed) {
  const nn::NamedTensors pa = fused.named_parameters(), pb = composed.named_parameters();
  REQUIRE(pa.size() == pb.size());
  for (std::size_t i = 0; i < pa.size(); ++i) {
    INFO(pa[i].first);
    CHECK(all_close(pa[i].second.grad(), pb[i].second.grad(), 1e-12, 1e-12));
  }
}

const std::vector<std::string> cell_norms = {"none",   "layernorm",  "rmsnorm",  "prmsnorm:0.5",
                                             "l2norm", "weightnorm", "batchnorm"};

nn::RecurrentOptions layer_options(const std::string& norm, bool bidirectional,
                                   bool batch_first = false, bool fused = true) {
  return {.cell = {.norm = norm, .fused = fused, .dtype = f64},
          .bidirectional = bidirectional,
          .batch_first = batch_first};
}

}  // namespace

TEST_CASE("unbind gives select's slices and gathers their gradients in one buffer") {
  const Tensor x = leaf({3, 2, 4});
  const std::vector<Tensor> slices = unbind(x, 1);
  REQUIRE(slices.size() == 2);
  CHECK(all_close(slices[1], x.select(1, 1), 0, 0));
  CHECK_GRADIENTS(
      [](const std::vector<Tensor>& in) {
        const std::vector<Tensor> s = unbind(in[0], 0);
        return s[0] * s[2] + s[2];  // slice 1 gets no gradient: its window must be zero
      },
      {x});
  // Only slice 2 used: the others' windows are zero, and backward can run twice.
  const Tensor y = (unbind(x, 0)[2] * 3).sum();
  y.backward(Tensor(), /*retain_graph=*/true);
  y.backward();
  std::vector<double> expected(24, 0.0);
  for (int i = 16; i < 24; ++i) expected[i] = 6.0;
  CHECK(all_close(x.grad(), expected, 0, 0));
  CHECK_ERROR(unbind(scalar_tensor(1.0), 0), "unbind", "0-d");
}

TEST_CASE("gru_step: fused against composed, forward and gradients, with and without a mask") {
  for (const DType dtype : {DType::Float32, DType::Float64}) {
    for (const bool masked : {false, true}) {
      INFO("dtype " << dtype << ", masked " << masked);
      Generator generator(3);
      const auto make = [&](const Shape& shape) {
        return randn(shape, generator, {.dtype = dtype}).requires_grad_();
      };
      const Tensor gx = make({3, 15}), gh = make({3, 15}), h = make({3, 5});
      const Tensor mask = masked ? step_mask(dtype) : Tensor();
      const Tensor dy = randn({3, 5}, generator, {.dtype = dtype});
      const Tensor fused = gru_step(gx, gh, h, mask);
      fused.backward(dy);
      const std::vector<Tensor> grads{gx.grad(), gh.grad(), h.grad()};
      for (const Tensor& t : {gx, gh, h}) Tensor(t).zero_grad();
      const Tensor composed = gru_step_composed(gx, gh, h, mask);
      composed.backward(dy);
      const double tolerance = dtype == DType::Float32 ? 1e-5 : 1e-13;
      CHECK(all_close(fused, composed, tolerance, tolerance));
      CHECK(all_close(grads[0], gx.grad(), tolerance, tolerance));
      CHECK(all_close(grads[1], gh.grad(), tolerance, tolerance));
      CHECK(all_close(grads[2], h.grad(), tolerance, tolerance));
      if (masked) CHECK(all_close(fused.select(0, 1), h.select(0, 1), 0, 0));  // kept exactly
    }
  }
}

TEST_CASE("gru_step and lstm_cell_state pass gradcheck, masked rows included") {
  const Tensor mask = step_mask();
  CHECK_GRADIENTS(
      [&](const std::vector<Tensor>& in) { return gru_step(in[0], in[1], in[2], mask); },
      {leaf({3, 12}, 1), leaf({3, 12}, 2), leaf({3, 4}, 3)});
  CHECK_GRADIENTS(
      [&](const std::vector<Tensor>& in) { return lstm_cell_state(in[0], in[1], mask); },
      {leaf({3, 16}, 4), leaf({3, 4}, 5)});
}

TEST_CASE("lstm_cell_state: fused against composed") {
  for (const DType dtype : {DType::Float32, DType::Float64}) {
    Generator generator(5);
    const Tensor gates = randn({3, 20}, generator, {.dtype = dtype}).requires_grad_();
    const Tensor c = randn({3, 5}, generator, {.dtype = dtype}).requires_grad_();
    const Tensor dy = randn({3, 5}, generator, {.dtype = dtype});
    const Tensor fused = lstm_cell_state(gates, c, step_mask(dtype));
    fused.backward(dy);
    const Tensor dgates = gates.grad(), dc = c.grad();
    Tensor(gates).zero_grad();
    Tensor(c).zero_grad();
    const Tensor composed = lstm_cell_state_composed(gates, c, step_mask(dtype));
    composed.backward(dy);
    const double tolerance = dtype == DType::Float32 ? 1e-5 : 1e-13;
    CHECK(all_close(fused, composed, tolerance, tolerance));
    CHECK(all_close(dgates, gates.grad(), tolerance, tolerance));
    CHECK(all_close(dc, c.grad(), tolerance, tolerance));
  }
}

TEST_CASE("GRU and LSTM layers pass gradcheck through several steps for every norm") {
  const Tensor mask = tensor({{1, 1}, {1, 1}, {1, 0}}, {.dtype = f64});  // [T=3, B=2]
  for (const std::string& norm : cell_norms) {
    for (const bool lstm : {false, true}) {
      INFO((lstm ? "LSTM, norm " : "GRU, norm ") << norm);
      Generator generator(11);
      std::shared_ptr<nn::Recurrent> layer;
      if (lstm)
        layer = std::make_shared<nn::Lstm>(3, 4, layer_options(norm, true), generator);
      else
        layer = std::make_shared<nn::Gru>(3, 4, layer_options(norm, true), generator);
      const Tensor x = leaf({3, 2, 3}, 21), h0 = leaf({2, 2, 4}, 22, 0.5);
      // Inputs and initial state, through outputs and final states together.
      CHECK_GRADIENTS(
          [&](const std::vector<Tensor>& in) {
            const nn::RecurrentOutput out = layer->forward(in[0], mask, in[1]);
            return cat({out.output.flatten(), out.hidden.flatten()});
          },
          {x, h0});
      const auto forward = [&] {
        const nn::RecurrentOutput out = layer->forward(x.detach(), mask, h0.detach());
        return lstm ? cat({out.output.flatten(), out.cell.flatten()}) : out.output;
      };
      CHECK_PARAMETER_GRADIENTS(*layer, forward);
    }
  }
}

TEST_CASE("GRU layer: fused and composed steps agree, for a norm and a mask") {
  const Tensor x = leaf({4, 3, 5}, 31);
  const Tensor lengths = tensor({4, 2, 3}, {.dtype = DType::Int64});
  for (const bool lstm : {false, true}) {
    INFO((lstm ? "LSTM" : "GRU"));
    std::shared_ptr<nn::Recurrent> fused, composed;
    Generator g1(1), g2(1);
    if (lstm) {
      fused = std::make_shared<nn::Lstm>(5, 6, layer_options("rmsnorm", true), g1);
      composed = std::make_shared<nn::Lstm>(5, 6, layer_options("rmsnorm", true, false, false), g2);
    } else {
      fused = std::make_shared<nn::Gru>(5, 6, layer_options("layernorm", true), g1);
      composed =
          std::make_shared<nn::Gru>(5, 6, layer_options("layernorm", true, false, false), g2);
    }
    const nn::RecurrentOutput a = fused->forward_lengths(x, lengths);
    const nn::RecurrentOutput b = composed->forward_lengths(x, lengths);
    CHECK(all_close(a.output, b.output, 1e-13, 1e-13));
    CHECK(all_close(a.hidden, b.hidden, 1e-13, 1e-13));
    a.output.sum().backward();
    b.output.sum().backward();
    CHECK(all_close(fused->cell(1).bias_hh.grad(), composed->cell(1).bias_hh.grad(), 1e-12, 1e-12));
  }
}

TEST_CASE("padded steps leave the state unchanged: a padded batch equals each sequence alone") {
  const std::vector<std::int64_t> lengths{5, 2, 4};
  const Tensor x = leaf({5, 3, 4}, 41);
  for (const bool lstm : {false, true}) {
    INFO((lstm ? "LSTM" : "GRU"));
    Generator generator(2);
    std::shared_ptr<nn::Recurrent> layer;
    if (lstm)
      layer = std::make_shared<nn::Lstm>(4, 3, layer_options("rmsnorm", true), generator);
    else
      layer = std::make_shared<nn::Gru>(4, 3, layer_options("rmsnorm", true), generator);
    const nn::RecurrentOutput batch = layer->forward_lengths(x, from_vector(lengths, {3}));
    for (std::int64_t b = 0; b < 3; ++b) {
      const Tensor alone_input = x.narrow(1, b, 1).narrow(0, 0, lengths[b]);
      const nn::RecurrentOutput alone = layer->forward(alone_input);
      CHECK(all_close(batch.output.narrow(1, b, 1).narrow(0, 0, lengths[b]), alone.output, 1e-12,
                      1e-14));
      CHECK(all_close(batch.hidden.narrow(1, b, 1), alone.hidden, 1e-12, 1e-14));
      if (lstm) CHECK(all_close(batch.cell.narrow(1, b, 1), alone.cell, 1e-12, 1e-14));
      // Outputs at padded steps are zero.
      if (lengths[b] < 5)
        CHECK(
            batch.output.narrow(1, b, 1).narrow(0, lengths[b], 5 - lengths[b]).abs().sum().item() ==
            0.0);
    }
  }
}

TEST_CASE(
    "forward_lengths runs packed and equals forward with the lengths' mask, values and "
    "gradients") {
  // Unsorted lengths, a tie, an empty sequence and a full one.
  const std::vector<std::int64_t> lengths{2, 5, 0, 3, 5};
  const Tensor lengths_tensor = from_vector(lengths, {5});
  for (const bool lstm : {false, true}) {
    for (const bool batch_first : {false, true}) {
      INFO((lstm ? "LSTM" : "GRU") << (batch_first ? ", batch first" : ", time major"));
      Generator generator(51);
      std::shared_ptr<nn::Recurrent> layer;
      const auto options = layer_options("layernorm", true, batch_first);
      if (lstm)
        layer = std::make_shared<nn::Lstm>(3, 4, options, generator);
      else
        layer = std::make_shared<nn::Gru>(3, 4, options, generator);
      const Tensor x = batch_first ? leaf({5, 5, 3}, 52) : leaf({5, 5, 3}, 53);
      const Tensor h0 = leaf({2, 5, 4}, 54, 0.5), c0 = leaf({2, 5, 4}, 55, 0.5);
      Generator masks(56);
      const Tensor dropout = nn::functional::dropout_mask({2, 5, 4}, 0.3, masks, {.dtype = f64});
      const Tensor mask = nn::sequence_mask(lengths_tensor, 5, batch_first, f64);
      const auto run = [&](bool packed, const std::vector<Tensor>& in) {
        const Tensor cell = lstm ? in[2] : Tensor();
        const nn::RecurrentOutput out =
            packed ? layer->forward_lengths(in[0], lengths_tensor, in[1], cell, dropout)
                   : layer->forward(in[0], mask, in[1], cell, dropout);
        std::vector<Tensor> parts{out.output.flatten(), out.hidden.flatten()};
        if (lstm) parts.push_back(out.cell.flatten());
        return cat(parts);
      };
      const std::vector<Tensor> inputs{x, h0, c0};
      const Tensor packed = run(true, inputs), masked = run(false, inputs);
      CHECK(all_close(packed, masked, 1e-13, 1e-13));
      // The same gradients for inputs, initial states and parameters.
      const Tensor weights = testing::leaf(packed.shape(), 57).detach();
      const auto gradients = [&](bool is_packed) {
        for (Tensor in : inputs) in.zero_grad();
        layer->zero_grad();
        sum(run(is_packed, inputs) * weights).backward();
        std::vector<Tensor> grads;
        for (const Tensor& in : inputs)
          grads.push_back(in.grad().defined() ? in.grad().clone() : zeros({1}, {.dtype = f64}));
        for (const Tensor& parameter : layer->parameters())
          grads.push_back(parameter.grad().clone());
        return grads;
      };
      const std::vector<Tensor> from_packed = gradients(true), from_masked = gradients(false);
      REQUIRE(from_packed.size() == from_masked.size());
      for (std::size_t i = 0; i < from_packed.size(); ++i) {
        INFO("gradient " << i);
        CHECK(all_close(from_packed[i], from_masked[i], 1e-12, 1e-13));
      }
      CHECK_GRADIENTS([&](const std::vector<Tensor>& in) { return run(true, in); }, inputs);
    }
  }
}

TEST_CASE("batch_first is the time-major layer with its dims swapped") {
  Generator g1(9), g2(9);
  nn::Gru time_major(3, 4, layer_options("layernorm", true), g1);
  nn::Gru batch_first(3, 4, layer_options("layernorm", true, true), g2);
  const Tensor x = leaf({2, 5, 3}, 51);  // [B, T, I]
  const Tensor lengths = tensor({5, 3}, {.dtype = DType::Int64});
  const nn::RecurrentOutput a = batch_first.forward_lengths(x, lengths);
  const nn::RecurrentOutput b = time_major.forward_lengths(x.transpose(0, 1), lengths);
  CHECK(a.output.shape() == Shape({2, 5, 8}));
  CHECK(all_close(a.output, b.output.transpose(0, 1).contiguous(), 1e-14, 1e-15));
  CHECK(all_close(a.hidden, b.hidden, 1e-14, 1e-15));
}

TEST_CASE("cells: one step of the layer, and the parameters each norm adds") {
  Generator generator(4);
  nn::GruCell cell(3, 4, {.norm = "layernorm", .dtype = f64}, generator);
  const Tensor x = leaf({2, 3}, 61), h = leaf({2, 4}, 62);
  const Tensor one = cell.forward(x, h);
  CHECK(one.shape() == Shape({2, 4}));
  CHECK(all_close(one, cell.step(cell.input_side(x.unsqueeze(0)).squeeze(0), {h}, Tensor())[0], 0,
                  0));
  // W_ih, W_hh, b_ih, b_hh, and a gain and bias for each of the four LayerNorms.
  CHECK(cell.named_parameters().size() == 12);
  nn::GruCell plain(3, 4, {.dtype = f64});
  CHECK(plain.named_parameters().size() == 4);
  nn::LstmCell rms(3, 4, {.norm = "rmsnorm", .dtype = f64});
  CHECK(rms.named_parameters().size() == 7);  // three gains, no biases
  CHECK(rms.weight_ih().shape() == Shape({16, 3}));
  nn::GruCell weight_normed(3, 4, {.norm = "weightnorm", .dtype = f64});
  CHECK(weight_normed.named_parameters().size() == 6);  // direction and gain for each weight
  const nn::LstmState state = rms.forward(x, {h, h});
  CHECK(state.cell.shape() == Shape({2, 4}));
}

TEST_CASE("state dropout masks h where W_hh reads it, and only there, at every step") {
  Generator generator(41);
  // Norm none: the step is gru_step / the LSTM's gates over W_hh (h * m) + b_hh.
  nn::GruCell gru(3, 4, {.dtype = f64}, generator);
  const Tensor x = leaf({2, 3}, 42), h = leaf({2, 4}, 43, 0.5);
  const Tensor m = nn::functional::dropout_mask({2, 4}, 0.5, generator, {.dtype = f64});
  const Tensor expected = gru_step(
      gru.input_side(x), nn::functional::linear(h * m, gru.weight_hh(), gru.bias_hh), h, Tensor());
  CHECK(all_close(gru.step(gru.input_side(x), {h}, Tensor(), m)[0], expected, 1e-15, 0));
  // A mask of ones changes nothing.
  CHECK(all_close(gru.step(gru.input_side(x), {h}, Tensor(), ones({2, 4}, {.dtype = f64}))[0],
                  gru.forward(x, h), 0, 0));

  // The layer gives each direction its own mask and reuses it at every step: the same as
  // running the cells by hand.
  for (const bool lstm : {false, true}) {
    INFO((lstm ? "LSTM" : "GRU"));
    Generator g(44);
    std::shared_ptr<nn::Recurrent> layer;
    if (lstm)
      layer = std::make_shared<nn::Lstm>(3, 4, layer_options("rmsnorm", true), g);
    else
      layer = std::make_shared<nn::Gru>(3, 4, layer_options("rmsnorm", true), g);
    const Tensor xs = leaf({3, 2, 3}, 45);
    const Tensor masks = nn::functional::dropout_mask({2, 2, 4}, 0.3, g, {.dtype = f64});
    const nn::RecurrentOutput out = layer->forward(xs, Tensor(), Tensor(), Tensor(), masks);
    for (std::int64_t direction : {0, 1}) {
      nn::RecurrentCell& cell = layer->cell(direction);
      std::vector<Tensor> state{zeros({2, 4}, {.dtype = f64})};
      if (lstm) state.push_back(zeros({2, 4}, {.dtype = f64}));
      for (std::int64_t i = 0; i < 3; ++i) {
        const std::int64_t t = direction == 0 ? i : 2 - i;
        state = cell.step(cell.input_side(xs.select(0, t)), state, Tensor(),
                          masks.select(0, direction));
        CHECK(all_close(out.output.select(0, t).narrow(1, 4 * direction, 4), state[0], 1e-14, 0));
      }
    }
    // Gradients through the masked state, in float64 against finite differences.
    CHECK_GRADIENTS(
        [&](const std::vector<Tensor>& in) {
          return layer->forward(in[0], Tensor(), Tensor(), Tensor(), masks).output;
        },
        {xs});
    CHECK_ERROR(layer->forward(xs, Tensor(), Tensor(), Tensor(), ones({2, 4}, {.dtype = f64})),
                "state_dropout", "[2, 2, 4]", "[2, 4]");
  }
  CHECK_ERROR(gru.step(gru.input_side(x), {h}, Tensor(), ones({3, 4}, {.dtype = f64})),
              "state_dropout", "[2, 4]", "[3, 4]");
}

TEST_CASE("sequence_mask") {
  const Tensor lengths = tensor({2, 0, 3}, {.dtype = DType::Int64});
  CHECK(all_close(nn::sequence_mask(lengths, 3), {1, 1, 0, 0, 0, 0, 1, 1, 1}, 0, 0));
  CHECK(all_close(nn::sequence_mask(lengths, 3, false), {1, 0, 1, 1, 0, 1, 0, 0, 1}, 0, 0));
  CHECK_ERROR(nn::sequence_mask(lengths, 2), "sequence_mask", "length 3", "row 2");
  CHECK_ERROR(nn::sequence_mask(tensor({1.0}), 2), "sequence_mask", "int64");
}

TEST_CASE("batchnorm in a cell: each step over its own rows, no running estimates, gains 0.1") {
  Generator generator(5);
  nn::LstmCell cell(3, 4, {.norm = "batchnorm", .dtype = f64}, generator);
  for (const auto& [name, parameter] : cell.named_parameters())
    if (name.find("gain") != std::string::npos)
      CHECK(all_close(parameter, std::vector<double>(parameter.numel(), 0.1), 0, 0));
  CHECK(cell.named_buffers().empty());  // no running mean or variance anywhere
  const Tensor x = leaf({5, 3}, 1), h = leaf({5, 4}, 2), c = leaf({5, 4}, 3);
  const nn::LstmState train = cell.forward(x.detach(), {h.detach(), c.detach()});
  // The state side of one step, normalised over the step's 5 rows: every column of
  // (BN(W_hh h + b_hh) - bias) / gain has mean 0 and variance 1 over the batch.
  const Tensor state_side = matmul(h.detach(), cell.weight_hh().t()) + cell.bias_hh;
  std::shared_ptr<nn::Norm> state_norm;
  for (const auto& [name, child] : cell.named_children())
    if (name == "state_norm") state_norm = std::dynamic_pointer_cast<nn::Norm>(child);
  REQUIRE(state_norm != nullptr);
  Tensor bias;
  for (const auto& [name, parameter] : state_norm->named_parameters())
    if (name == "norm.bias") bias = parameter;
  const Tensor standard = (state_norm->forward(state_side) - bias) / 0.1;
  CHECK(all_close(mean(standard, {0}), std::vector<double>(16, 0.0), 0, 1e-9));
  CHECK(all_close(var(standard, {0}, false, false), std::vector<double>(16, 1.0), 1e-3, 0));
  // Evaluation uses the batch's own statistics too.
  cell.eval();
  const nn::LstmState evaluated = cell.forward(x.detach(), {h.detach(), c.detach()});
  CHECK(all_close(evaluated.hidden, train.hidden, 0, 0));
}

TEST_CASE("recurrent layers refuse bad input with clear errors") {
  nn::Gru gru(3, 4);
  nn::Lstm lstm(3, 4, {.bidirectional = true});
  CHECK_ERROR(nn::Gru(3, 4, {.cell = {.norm = "rmsnrom"}}), "rmsnrom");
  CHECK_ERROR(nn::Gru(0, 4), "input_size");
  CHECK_ERROR(gru.forward(zeros({5, 2, 7})), "GRU", "[steps, batch, 3]", "[5, 2, 7]");
  CHECK_ERROR(gru.forward(zeros({5, 2, 3}, {.dtype = f64})), "GRU", "float64");
  CHECK_ERROR(gru.forward(zeros({5, 2, 3}), zeros({2, 5})), "GRU", "mask", "[5, 2]");
  CHECK_ERROR(gru.forward(zeros({5, 2, 3}), Tensor(), zeros({2, 2, 4})), "initial_hidden",
              "[1, 2, 4]");
  CHECK_ERROR(gru.forward(zeros({5, 2, 3}), Tensor(), Tensor(), zeros({1, 2, 4})), "no cell state");
  CHECK_ERROR(lstm.forward(zeros({5, 2, 3}), Tensor(), Tensor(), zeros({1, 2, 4})), "initial_cell",
              "[2, 2, 4]");
  CHECK_ERROR(gru.forward_lengths(zeros({5, 2, 3}), tensor({5, 6}, {.dtype = DType::Int64})),
              "length 6");
  CHECK_ERROR(gru_step(zeros({2, 11}), zeros({2, 12}), zeros({2, 4})), "gru_step", "[2, 12]",
              "[2, 11]");
  CHECK_ERROR(lstm_cell_state(zeros({2, 16}), zeros({2, 4}), zeros({3})), "lstm_cell_state", "mask",
              "[2]");
  CHECK_ERROR(lstm.cell(2), "direction 2");
}

TEST_CASE("RecurrentCell::set_weights replaces W_ih and W_hh, plain or under WeightNorm") {
  for (const char* spec : {"none", "rmsnorm", "weightnorm"}) {
    INFO("norm " << spec);
    nn::GruCell cell(3, 4, {.norm = spec});
    const Tensor w_ih = randn({12, 3});
    const Tensor w_hh = randn({12, 4});
    cell.set_weights(w_ih, w_hh);
    CHECK(testing::all_close(cell.weight_ih(), w_ih.to_vector<double>(), 1e-6, 1e-6));
    CHECK(testing::all_close(cell.weight_hh(), w_hh.to_vector<double>(), 1e-6, 1e-6));
    // The parameters themselves changed: a step depends on the new weights.
    const Tensor x = randn({2, 3});
    const Tensor h = randn({2, 4});
    const Tensor before = cell.forward(x, h);
    cell.set_weights(mul(w_ih, 2.0), w_hh);
    CHECK_FALSE(testing::all_close(cell.forward(x, h), before.to_vector<double>(), 1e-4, 1e-4));
    CHECK_ERROR(cell.set_weights(randn({12, 4}), w_hh), "set_weights expects W_ih [12, 3]",
                "[12, 4]");
  }
}

TEST_CASE(
    "a GRU step takes one row selected from a sequence, whose stride over rows is not its width") {
  // x.select(1, t) of a [1, T, 3H] input side is [1, 3H] with strides [T 3H, 1]: contiguous in
  // every way that matters, and contiguous() leaves it as it is.
  for (const bool fused : {true, false}) {
    INFO("fused " << fused);
    nn::GruCell cell(3, 4, {.norm = "rmsnorm", .fused = fused});
    const Tensor sequence = cell.input_side(randn({1, 5, 3}));  // [1, 5, 12]
    const Tensor h = randn({1, 4});
    const Tensor row = sequence.select(1, 2);
    CHECK(row.strides() == Strides{60, 1});
    const Tensor expected = cell.step(row.clone(), {h}, Tensor())[0];
    CHECK(all_close(cell.step(row, {h}, Tensor())[0], expected.to_vector<double>(), 0, 0));
  }
}

// ---- the GRU step with its state norms: normed_gru_step ----------------------------------------

TEST_CASE("normed_gru_step: fused against composed for every row norm, values and gradients") {
  const std::int64_t batch = 4, hidden = 6;
  for (const Variant& variant : variants) {
    for (const DType dtype : {DType::Float32, DType::Float64}) {
      for (const bool masked : {false, true}) {
        INFO(variant.name << ", " << dtype << ", masked " << masked);
        Generator generator(3);
        const auto make = [&](const Shape& shape, double scale) {
          return (randn(shape, generator, {.dtype = dtype}) * scale).detach().requires_grad_();
        };
        // gh with a large mean on one row: the norms must remove it.
        const Tensor gx = make({batch, 3 * hidden}, 1.0);
        const Tensor gh = (make({batch, 3 * hidden}, 2.0) +
                           tensor({0.0, 30.0, 0.0, -1.0}, {.dtype = dtype}).unsqueeze(1))
                              .detach()
                              .requires_grad_();
        const Tensor h = make({batch, hidden}, 1.0);
        const Tensor mask = masked ? tensor({1, 0, 1, 1}, {.dtype = dtype}) : Tensor();
        const Tensor dy = randn({batch, hidden}, generator, {.dtype = dtype});
        const GruStateNorms norms = state_norms(variant, hidden, dtype);
        std::vector<Tensor> inputs = {gx, gh, h};
        for (const Tensor& t : affine_of(norms)) inputs.push_back(t);

        const Tensor fused = normed_gru_step(gx, gh, h, norms, mask);
        fused.backward(dy);
        std::vector<Tensor> fused_grads;
        for (Tensor& t : inputs) {
          fused_grads.push_back(t.grad());
          t.zero_grad();
        }
        const Tensor composed = normed_gru_step_composed(gx, gh, h, norms, mask);
        composed.backward(dy);

        const double tolerance = dtype == DType::Float32 ? 2e-5 : 1e-12;
        CHECK(all_close(fused, composed, tolerance, tolerance));
        for (std::size_t i = 0; i < inputs.size(); ++i) {
          INFO("gradient of input " << i);
          REQUIRE(fused_grads[i].defined());
          CHECK(all_close(fused_grads[i], inputs[i].grad(), tolerance, tolerance));
        }
        if (masked) CHECK(all_close(fused.select(0, 1), h.select(0, 1), 0, 0));  // kept exactly
      }
    }
  }
}

TEST_CASE("normed_gru_step passes gradcheck for every row norm, gains and biases included") {
  const Tensor mask = tensor({1, 0, 1}, {.dtype = DType::Float64});
  for (const Variant& variant : variants) {
    INFO(variant.name);
    const GruStateNorms norms = state_norms(variant, 4, DType::Float64);
    std::vector<Tensor> inputs = {leaf({3, 12}, 1), leaf({3, 12}, 2, 2.0), leaf({3, 4}, 3)};
    for (const Tensor& t : affine_of(norms)) inputs.push_back(t);
    CHECK_GRADIENTS(
        [&](const std::vector<Tensor>& in) {
          return normed_gru_step(in[0], in[1], in[2], with_affine(norms, in, 3), mask);
        },
        inputs);
  }
}

TEST_CASE("normed_gru_step: no rows give empty states and zero gradients for the gains") {
  const GruStateNorms norms = state_norms(variants[0], 3, DType::Float64);
  const Tensor gx = leaf({0, 9}), gh = leaf({0, 9}), h = leaf({0, 3});
  const Tensor out = normed_gru_step(gx, gh, h, norms);
  CHECK(out.shape() == Shape({0, 3}));
  out.sum().backward();
  CHECK(all_close(norms.gates.gain.grad(), std::vector<double>(6, 0.0), 0, 0));
  CHECK(all_close(norms.candidate.bias.grad(), std::vector<double>(3, 0.0), 0, 0));
}

TEST_CASE("GRU cells fuse their state norms where the norms have a row form") {
  for (const std::string norm : {"layernorm", "rmsnorm", "prmsnorm:0.25", "l2norm", "batchnorm"}) {
    INFO(norm);
    Generator g1(5), g2(5);
    nn::GruCell fused(4, 5, {.norm = norm, .dtype = DType::Float64}, g1);
    nn::GruCell composed(4, 5, {.norm = norm, .fused = false, .dtype = DType::Float64}, g2);
    const Tensor x = leaf({3, 4}, 1), h = leaf({3, 5}, 2);
    const Tensor a = fused.forward(x, h), b = composed.forward(x, h);
    const std::string node = a.grad_fn()->name();
    CHECK(node == (norm == "batchnorm" ? "GruStepBackward" : "NormedGruStepBackward"));
    CHECK(all_close(a, b, 1e-13, 1e-13));
    (a * a).sum().backward();
    (b * b).sum().backward();
    check_same_parameter_grads(fused, composed);
  }
}

TEST_CASE("normed_gru_step refuses norms it cannot apply, naming them") {
  const Variant rms = variants[1];
  const Tensor gx = leaf({2, 9}), gh = leaf({2, 9}), h = leaf({2, 3});
  GruStateNorms norms = state_norms(rms, 3, DType::Float64);
  norms.candidate.gain = leaf({4});
  CHECK_ERROR(normed_gru_step(gx, gh, h, norms), "normed_gru_step", "candidate norm's gain", "[3]");
  norms = state_norms(rms, 3, DType::Float64);
  norms.gates.gain = norms.gates.gain.to(DType::Float32);
  CHECK_ERROR(normed_gru_step(gx, gh, h, norms), "normed_gru_step");
  norms = state_norms(rms, 3, DType::Float64);
  norms.gates.k = 7;
  CHECK_ERROR(normed_gru_step(gx, gh, h, norms), "normed_gru_step", "gates norm's k = 7");
  norms = state_norms(rms, 3, DType::Float64);
  norms.candidate.options.per_channel = true;
  CHECK_ERROR(normed_gru_step(gx, gh, h, norms), "normed_gru_step", "per channel");
  norms = state_norms(rms, 3, DType::Float64);
  norms.gates.options.eps = -1;
  CHECK_ERROR(normed_gru_step(gx, gh, h, norms), "eps must be non-negative");
  CHECK_ERROR(normed_gru_step(gx, leaf({2, 8}), h, norms), "normed_gru_step", "gh must be [2, 9]");
}

// ---- the LSTM step with its norms: lstm_step ---------------------------------------------------

namespace {

// Every variant on both norms, the state norm alone, and no norm at all.
std::vector<std::pair<std::string, LstmStepNorms>> norm_cases(std::int64_t hidden, DType dtype) {
  std::vector<std::pair<std::string, LstmStepNorms>> cases;
  for (const Variant& variant : variants)
    cases.emplace_back(variant.name, lstm_norms(variant, hidden, dtype));
  cases.emplace_back("rmsnorm on the state side only", lstm_norms(variants[1], hidden, dtype));
  cases.back().second.cell.reset();
  cases.emplace_back("no norm", LstmStepNorms{});
  return cases;
}

// One number from both outputs, so that backward reaches h and c.
Tensor both(const std::array<Tensor, 2>& state, const Tensor& dh, const Tensor& dc) {
  return (state[0] * dh).sum() + (state[1] * dc).sum();
}

}  // namespace

TEST_CASE("lstm_step: fused against composed for every row norm and none, values and gradients") {
  const std::int64_t batch = 4, hidden = 5;
  for (const DType dtype : {DType::Float32, DType::Float64}) {
    for (const auto& norm_case : norm_cases(hidden, dtype)) {
      const auto& name = norm_case.first;
      const auto& norms = norm_case.second;
      for (const bool masked : {false, true}) {
        INFO(name << ", " << dtype << ", masked " << masked);
        Generator generator(3);
        const auto make = [&](const Shape& shape, double scale) {
          return (randn(shape, generator, {.dtype = dtype}) * scale).detach().requires_grad_();
        };
        const Tensor gx = make({batch, 4 * hidden}, 1.0), gh = make({batch, 4 * hidden}, 2.0);
        const Tensor h = make({batch, hidden}, 1.0), c = make({batch, hidden}, 1.5);
        const Tensor mask = masked ? tensor({1, 0, 1, 1}, {.dtype = dtype}) : Tensor();
        const Tensor dh = randn({batch, hidden}, generator, {.dtype = dtype});
        const Tensor dc = randn({batch, hidden}, generator, {.dtype = dtype});
        std::vector<Tensor> inputs = {gx, gh, h, c};
        for (Tensor t : affine_of(norms)) {
          t.zero_grad();  // the gains are shared with the case before
          inputs.push_back(t);
        }

        const std::array<Tensor, 2> fused = lstm_step(gx, gh, h, c, norms, mask);
        both(fused, dh, dc).backward();
        std::vector<Tensor> fused_grads;
        for (Tensor& t : inputs) {
          fused_grads.push_back(t.grad());
          t.zero_grad();
        }
        const std::array<Tensor, 2> composed = lstm_step_composed(gx, gh, h, c, norms, mask);
        both(composed, dh, dc).backward();

        const double tolerance = dtype == DType::Float32 ? 2e-5 : 1e-12;
        CHECK(all_close(fused[0], composed[0], tolerance, tolerance));
        CHECK(all_close(fused[1], composed[1], tolerance, tolerance));
        for (std::size_t i = 0; i < inputs.size(); ++i) {
          INFO("gradient of input " << i);
          REQUIRE(fused_grads[i].defined());
          // Without a mask the composed step never reads h_prev: no gradient, the fused one's 0.
          const Tensor expected =
              inputs[i].grad().defined() ? inputs[i].grad() : zeros_like(fused_grads[i]);
          CHECK(all_close(fused_grads[i], expected, tolerance, tolerance));
        }
        if (masked) {  // a row that skips the step keeps its state exactly
          CHECK(all_close(fused[0].select(0, 1), h.select(0, 1), 0, 0));
          CHECK(all_close(fused[1].select(0, 1), c.select(0, 1), 0, 0));
        }
      }
    }
  }
}

TEST_CASE("lstm_step passes gradcheck for every row norm and none, gains and biases included") {
  const Tensor mask = tensor({1, 0, 1}, {.dtype = DType::Float64});
  for (const auto& norm_case : norm_cases(3, DType::Float64)) {
    const auto& name = norm_case.first;
    const auto& norms = norm_case.second;
    INFO(name);
    std::vector<Tensor> inputs = {leaf({3, 12}, 1), leaf({3, 12}, 2, 2.0), leaf({3, 3}, 3),
                                  leaf({3, 3}, 4)};
    for (const Tensor& t : affine_of(norms)) inputs.push_back(t);
    CHECK_GRADIENTS(
        [&](const std::vector<Tensor>& in) {
          const std::array<Tensor, 2> state =
              lstm_step(in[0], in[1], in[2], in[3], with_affine(norms, in, 4), mask);
          return cat({state[0].flatten(), (state[1] * 0.7).flatten()});
        },
        inputs);
  }
}

TEST_CASE("LSTM cells run the fused step for row norms and none, the modules for batchnorm") {
  for (const std::string norm :
       {"none", "layernorm", "rmsnorm", "prmsnorm:0.25", "l2norm", "weightnorm", "batchnorm"}) {
    INFO(norm);
    Generator g1(5), g2(5);
    nn::LstmCell fused(4, 5, {.norm = norm, .dtype = DType::Float64}, g1);
    nn::LstmCell composed(4, 5, {.norm = norm, .fused = false, .dtype = DType::Float64}, g2);
    const Tensor x = leaf({3, 4}, 1), h = leaf({3, 5}, 2), c = leaf({3, 5}, 3);
    const nn::LstmState a = fused.forward(x, {h, c}), b = composed.forward(x, {h, c});
    const bool fuses = norm != "batchnorm";
    // Both outputs are views of the fused step's one [B, 2H] result.
    CHECK((a.cell.grad_fn()->name() == std::string("SplitPieceBackward")) == fuses);
    CHECK(all_close(a.hidden, b.hidden, 1e-13, 1e-13));
    CHECK(all_close(a.cell, b.cell, 1e-13, 1e-13));
    (a.hidden * a.hidden + a.cell).sum().backward();
    (b.hidden * b.hidden + b.cell).sum().backward();
    check_same_parameter_grads(fused, composed);
  }
}

TEST_CASE("lstm_step refuses operands and norms it cannot take, naming them") {
  const Tensor gx = leaf({2, 12}), gh = leaf({2, 12}), h = leaf({2, 3}), c = leaf({2, 3});
  LstmStepNorms norms = lstm_norms(variants[1], 3, DType::Float64);
  CHECK_ERROR(lstm_step(gx, leaf({2, 9}), h, c, norms), "lstm_step", "gh must be [2, 12]");
  CHECK_ERROR(lstm_step(gx, gh, h, leaf({2, 4}), norms), "lstm_step", "c_prev");
  norms.cell->gain = leaf({4});
  CHECK_ERROR(lstm_step(gx, gh, h, c, norms), "lstm_step", "cell norm's gain", "[3]");
  norms = lstm_norms(variants[1], 3, DType::Float64);
  norms.state->k = 13;
  CHECK_ERROR(lstm_step(gx, gh, h, c, norms), "lstm_step", "state norm's k = 13");
}

// ---- on a GPU: CPU against CUDA ----------------------------------------------------------------

// The CUDA kernels against the CPU's, values and gradients. Tolerances: the step kernels are
// pointwise (testing::elementwise), the steps with their norms are held to the norms' bounds
// (testing::norm_values, testing::norm_gradients), and a layer to testing::layer_tolerance.

using testing::elementwise;
using testing::Inputs;
using testing::layer_tolerance;
using testing::normal;
using testing::parity_layer;
using testing::parity_mismatch;
using testing::Tolerance;

namespace {

// The norm slot choices the layers are compared on.
const std::vector<std::string> gpu_cell_norms = {"none",         "layernorm", "rmsnorm",
                                                 "prmsnorm:0.5", "l2norm",    "weightnorm"};

// A step's mask [rows] in which rows 1, 4, 7, ... keep their state.
Tensor every_third_row_kept(std::int64_t rows, DType dtype) {
  std::vector<double> takes(static_cast<std::size_t>(rows));
  for (std::size_t i = 0; i < takes.size(); ++i) takes[i] = i % 3 == 1 ? 0.0 : 1.0;
  return from_vector(takes, {rows}).to(dtype);
}

// The gradients of a fused step's norm gains and biases over `rows` rows: the norms' own
// tolerance (sums over a row enter every value), or that of a sum of O(1) products over the
// rows where that is larger.
Tolerance affine_tolerance(DType dtype, std::int64_t rows) {
  const Tolerance gradients = testing::norm_gradients(dtype);
  return {gradients.rtol,
          std::max(gradients.atol, testing::summed(dtype, static_cast<double>(rows), 4.0).atol)};
}

}  // namespace

TEST_CASE("cuda parity: fused gru_step and lstm_cell_state, with and without a mask") {
  SKIP_PARITY_WITHOUT_CUDA();
  for (const DType dtype : {DType::Float32, DType::Float64}) {
    for (const bool masked : {false, true}) {
      INFO(dtype << ", masked " << masked);
      const Tensor mask = masked ? tensor({1, 0, 1, 1, 0}, {.dtype = dtype}) : Tensor();
      const auto mask_on = [mask](const Tensor& like) {
        return mask.defined() ? testing::on_device_of(mask, like) : Tensor();
      };
      CHECK_NO_MISMATCH(parity_mismatch(
          [&](const Inputs& in) { return gru_step(in[0], in[1], in[2], mask_on(in[0])); },
          {normal({5, 21}, 1, dtype, 2.0), normal({5, 21}, 2, dtype, 2.0),
           normal({5, 7}, 3, dtype)},
          elementwise(dtype)));
      CHECK_NO_MISMATCH(parity_mismatch(
          [&](const Inputs& in) { return lstm_cell_state(in[0], in[1], mask_on(in[0])); },
          {normal({5, 28}, 4, dtype, 2.0), normal({5, 7}, 5, dtype)}, elementwise(dtype)));
      // Strided operands (transposed views) are read correctly too.
      CHECK_NO_MISMATCH(parity_mismatch(
          [&](const Inputs& in) { return gru_step(in[0].t(), in[1], in[2].t(), mask_on(in[0])); },
          {normal({21, 5}, 6, dtype, 2.0), normal({5, 21}, 7, dtype, 2.0),
           normal({7, 5}, 8, dtype)},
          elementwise(dtype)));
    }
  }
}

TEST_CASE("cuda parity: normed_gru_step for every row norm, at widths below and above a block") {
  SKIP_PARITY_WITHOUT_CUDA();
  // (rows, H): fewer units than a warp; several units per thread (256 threads a row); many
  // rows with a gates block of 2048.
  const std::vector<std::pair<std::int64_t, std::int64_t>> sizes = {{5, 7}, {3, 700}, {70, 1024}};
  for (const DType dtype : {DType::Float32, DType::Float64}) {
    for (const testing::Variant& variant : testing::variants) {
      for (const auto& size : sizes) {
        const auto& rows = size.first;
        const auto& hidden = size.second;
        for (const bool masked : {false, true}) {
          INFO(variant.name << ", " << dtype << ", " << rows << " rows of " << hidden
                            << " units, masked " << masked);
          const Tensor mask = masked ? every_third_row_kept(rows, dtype) : Tensor();
          const GruStateNorms norms = testing::state_norms(variant, hidden, dtype);
          Inputs inputs = {normal({rows, 3 * hidden}, 1, dtype),
                           normal({rows, 3 * hidden}, 2, dtype, 3.0),
                           normal({rows, hidden}, 3, dtype)};
          for (const Tensor& t : testing::affine_of(norms)) inputs.push_back(t.detach());
          const Tolerance gradients = testing::norm_gradients(dtype);
          const Tolerance affine = affine_tolerance(dtype, rows);
          CHECK_NO_MISMATCH(parity_mismatch(
              [&](const Inputs& in) {
                const Tensor m = mask.defined() ? testing::on_device_of(mask, in[0]) : Tensor();
                return normed_gru_step(in[0], in[1], in[2], testing::with_affine(norms, in, 3), m);
              },
              inputs, testing::norm_values(dtype), {gradients, gradients, gradients, affine}));
        }
      }
    }
  }
}

TEST_CASE("cuda parity: lstm_step for every row norm and none, at widths below and above a block") {
  SKIP_PARITY_WITHOUT_CUDA();
  const std::vector<std::pair<std::int64_t, std::int64_t>> sizes = {{5, 7}, {3, 700}, {70, 512}};
  for (const DType dtype : {DType::Float32, DType::Float64}) {
    std::vector<std::pair<std::string, LstmStepNorms>> cases;
    for (const auto& size : sizes) {
      const auto& rows = size.first;
      const auto& hidden = size.second;
      for (const testing::Variant& variant : testing::variants)
        cases.emplace_back(variant.name, testing::lstm_norms(variant, hidden, dtype));
      cases.emplace_back("no norm", LstmStepNorms{});
      for (const auto& norm_case : cases) {
        const auto& name = norm_case.first;
        const auto& norms = norm_case.second;
        for (const bool masked : {false, true}) {
          INFO(name << ", " << dtype << ", " << rows << " rows of " << hidden << " units, masked "
                    << masked);
          const Tensor mask = masked ? every_third_row_kept(rows, dtype) : Tensor();
          Inputs inputs = {normal({rows, 4 * hidden}, 1, dtype),
                           normal({rows, 4 * hidden}, 2, dtype, 3.0),
                           normal({rows, hidden}, 3, dtype), normal({rows, hidden}, 4, dtype)};
          for (const Tensor& t : testing::affine_of(norms)) inputs.push_back(t.detach());
          const Tolerance gradients = testing::norm_gradients(dtype);
          const Tolerance affine = affine_tolerance(dtype, rows);
          CHECK_NO_MISMATCH(parity_mismatch(
              [&](const Inputs& in) {
                const Tensor m = mask.defined() ? testing::on_device_of(mask, in[0]) : Tensor();
                const std::array<Tensor, 2> state =
                    lstm_step(in[0], in[1], in[2], in[3], testing::with_affine(norms, in, 4), m);
                return cat({state[0].flatten(), state[1].flatten()});
              },
              inputs, testing::norm_values(dtype),
              {gradients, gradients, gradients, gradients, affine}));
        }
      }
      cases.clear();
    }
  }
}

TEST_CASE("cuda parity: GRU and LSTM layers for every norm, with a mask, both directions") {
  SKIP_PARITY_WITHOUT_CUDA();
  // [T = 5, B = 3]: row 1 stops after 3 steps, row 2 after 1.
  const Tensor mask = tensor({{1, 1, 1}, {1, 1, 0}, {1, 1, 0}, {1, 0, 0}, {1, 0, 0}});
  for (const DType dtype : {DType::Float32, DType::Float64}) {
    for (const std::string& norm : gpu_cell_norms) {
      for (const bool lstm : {false, true}) {
        INFO((lstm ? "LSTM" : "GRU") << ", norm " << norm << ", " << dtype);
        const std::shared_ptr<nn::Recurrent> layer = parity_layer(lstm, norm, true, dtype);
        nn::Recurrent& recurrent = *layer;
        // Outputs, final hidden states (and cells) together, from an initial state; gradients
        // of the input, the initial state and every parameter.
        CHECK_NO_MISMATCH(testing::module_parity_mismatch(
            recurrent,
            [&](const Inputs& in) {
              const nn::RecurrentOutput out =
                  recurrent.forward(in[0], testing::on_device_of(mask.to(dtype), in[0]), in[1]);
              std::vector<Tensor> parts{out.output.flatten(), out.hidden.flatten()};
              if (lstm) parts.push_back(out.cell.flatten());
              return cat(parts);
            },
            {normal({5, 3, 6}, 13, dtype), normal({2, 3, 8}, 14, dtype, 0.5)},
            layer_tolerance(dtype, 5), layer_tolerance(dtype, 5)));
      }
    }
  }
}

TEST_CASE("cuda parity: GRU and LSTM layers with lengths, batch first") {
  SKIP_PARITY_WITHOUT_CUDA();
  const Tensor lengths = tensor({7, 2, 5, 4}, {.dtype = DType::Int64});
  for (const bool lstm : {false, true}) {
    INFO((lstm ? "LSTM" : "GRU"));
    const std::shared_ptr<nn::Recurrent> layer =
        parity_layer(lstm, "rmsnorm", true, DType::Float32, /*batch_first=*/true);
    nn::Recurrent& recurrent = *layer;
    CHECK_NO_MISMATCH(testing::module_parity_mismatch(
        recurrent,
        [&](const Inputs& in) {
          const nn::RecurrentOutput out = recurrent.forward_lengths(in[0], in[1]);
          return cat({out.output.flatten(), out.hidden.flatten()});
        },
        {normal({4, 7, 6}, 15), lengths}, layer_tolerance(DType::Float32, 7),
        layer_tolerance(DType::Float32, 7)));
  }
}

// ---- bfloat16 ----------------------------------------------------------------------------------

// The CPU computes bfloat16 through float32 working copies of its operands; CUDA's kernels
// widen each value they load and round once as they store: on both, the step kernels give, bit
// for bit, the float32 kernels' results on the same values, rounded once.

using namespace testing::twins;

TEST_CASE("bfloat16 kernels: GRU and LSTM cell kernels are the float32 ones, rounded once") {
  for (const Device device : devices_present()) {
    CAPTURE(device);
    Generator generator(46);
    backend::Backend& kernels = backend::backend_for(device);
    const std::int64_t B = 7, H = 45;
    const Twin mask = mask_twin(device, B);
    const backend::TensorRef mask_refs[2] = {mask.ref(false), mask.ref(true)};
    {
      INFO("GRU");
      const Twin gx = input_twin(device, {B, 3 * H}, generator),
                 gh = input_twin(device, {B, 3 * H}, generator);
      const Twin h_prev = input_twin(device, {B, H}, generator),
                 dh = input_twin(device, {B, H}, generator);
      const Twin h = output_twin(device, {B, H}), activations = output_twin(device, {B, 3 * H});
      const Twin dgx = output_twin(device, {B, 3 * H}), dgh = output_twin(device, {B, 3 * H});
      const Twin dh_prev = output_twin(device, {B, H});
      for (const bool narrow : {true, false}) {
        kernels.gru_cell_forward(h.ref(narrow), activations.ref(narrow), gx.ref(narrow),
                                 gh.ref(narrow), h_prev.ref(narrow), &mask_refs[narrow]);
      }
      CHECK_NO_MISMATCH(twin_mismatch(h, "h"));
      CHECK_NO_MISMATCH(twin_mismatch(activations, "activations"));
      // Backward reads the activations the bfloat16 forward saved, on both sides.
      const Twin saved{activations.stored, to_float32(activations.stored)};
      for (const bool narrow : {true, false}) {
        kernels.gru_cell_backward(dgx.ref(narrow), dgh.ref(narrow), dh_prev.ref(narrow),
                                  dh.ref(narrow), saved.ref(narrow), gh.ref(narrow),
                                  h_prev.ref(narrow), &mask_refs[narrow]);
      }
      CHECK_NO_MISMATCH(twin_mismatch(dgx, "dgx"));
      CHECK_NO_MISMATCH(twin_mismatch(dgh, "dgh"));
      CHECK_NO_MISMATCH(twin_mismatch(dh_prev, "dh_prev"));
    }
    {
      INFO("LSTM");
      const Twin gates = input_twin(device, {B, 4 * H}, generator),
                 c_prev = input_twin(device, {B, H}, generator);
      const Twin dc = input_twin(device, {B, H}, generator);
      const Twin c = output_twin(device, {B, H}), activations = output_twin(device, {B, 3 * H});
      const Twin dgates = output_twin(device, {B, 4 * H}), dc_prev = output_twin(device, {B, H});
      for (const bool narrow : {true, false}) {
        kernels.lstm_cell_forward(c.ref(narrow), activations.ref(narrow), gates.ref(narrow),
                                  c_prev.ref(narrow), &mask_refs[narrow]);
      }
      CHECK_NO_MISMATCH(twin_mismatch(c, "c"));
      CHECK_NO_MISMATCH(twin_mismatch(activations, "activations"));
      const Twin saved{activations.stored, to_float32(activations.stored)};
      for (const bool narrow : {true, false}) {
        kernels.lstm_cell_backward(dgates.ref(narrow), dc_prev.ref(narrow), dc.ref(narrow),
                                   saved.ref(narrow), c_prev.ref(narrow), &mask_refs[narrow]);
      }
      CHECK_NO_MISMATCH(twin_mismatch(dgates, "dgates"));
      CHECK_NO_MISMATCH(twin_mismatch(dc_prev, "dc_prev"));
    }
  }
}

TEST_CASE("bfloat16 kernels: normed GRU and LSTM steps are the float32 ones, rounded once") {
  for (const Device device : devices_present()) {
    CAPTURE(device);
    Generator generator(47);
    backend::Backend& kernels = backend::backend_for(device);
    // H = 300: a row block of 256 threads, some of which take two units.
    const std::int64_t B = 5, H = 300;
    const Twin mask = mask_twin(device, B);
    const backend::TensorRef mask_refs[2] = {mask.ref(false), mask.ref(true)};
    // A norm's gain and bias over `width` values, as references for each side.
    struct Affine {
      Twin gain, bias;
      backend::TensorRef refs[2][2];  // [narrow][gain, bias]
    };
    const auto affine = [&](std::int64_t width) {
      Affine a{input_twin(device, {width}, generator, 0.3),
               input_twin(device, {width}, generator, 0.1),
               {}};
      a.gain.stored = to_bfloat16(to_float32(a.gain.stored) + 1.0);
      a.gain.widened = to_float32(a.gain.stored);
      for (const bool narrow : {false, true})
        a.refs[narrow][0] = a.gain.ref(narrow), a.refs[narrow][1] = a.bias.ref(narrow);
      return a;
    };
    const auto gradients = [device](std::int64_t width) {
      return std::array<Twin, 2>{output_twin(device, {width}), output_twin(device, {width})};
    };

    {
      INFO("GRU: LayerNorm on the gates, partial RMSNorm on the candidate");
      const Affine gates = affine(2 * H), candidate = affine(H);
      const Twin gx = input_twin(device, {B, 3 * H}, generator),
                 gh = input_twin(device, {B, 3 * H}, generator, 2);
      const Twin h_prev = input_twin(device, {B, H}, generator),
                 dh = input_twin(device, {B, H}, generator);
      const Twin h = output_twin(device, {B, H}), activations = output_twin(device, {B, 3 * H});
      const Twin normalised = output_twin(device, {B, 3 * H}),
                 statistics = output_twin(device, {4, B}, true);
      for (const bool narrow : {true, false}) {
        const backend::GruStateNorms norms{layer_norm_params(),        rms_norm_params(H / 4),
                                           &gates.refs[narrow][0],     &gates.refs[narrow][1],
                                           &candidate.refs[narrow][0], &candidate.refs[narrow][1]};
        kernels.normed_gru_cell_forward(norms, h.ref(narrow), activations.ref(narrow),
                                        normalised.ref(narrow), statistics.ref(narrow),
                                        gx.ref(narrow), gh.ref(narrow), h_prev.ref(narrow),
                                        &mask_refs[narrow]);
      }
      CHECK_NO_MISMATCH(twin_mismatch(h, "h"));
      CHECK_NO_MISMATCH(twin_mismatch(activations, "activations"));
      CHECK_NO_MISMATCH(twin_mismatch(normalised, "normalised"));
      CHECK_NO_MISMATCH(twin_mismatch(statistics, "statistics"));

      const Twin saved_activations{activations.stored, to_float32(activations.stored)};
      const Twin saved_normalised{normalised.stored, to_float32(normalised.stored)};
      const Twin saved_statistics{statistics.stored, statistics.stored};
      const Twin dgx = output_twin(device, {B, 3 * H}), dgh = output_twin(device, {B, 3 * H});
      const Twin dh_prev = output_twin(device, {B, H});
      const auto gate_grads = gradients(2 * H), candidate_grads = gradients(H);
      for (const bool narrow : {true, false}) {
        const backend::GruStateNorms norms{layer_norm_params(),        rms_norm_params(H / 4),
                                           &gates.refs[narrow][0],     &gates.refs[narrow][1],
                                           &candidate.refs[narrow][0], &candidate.refs[narrow][1]};
        const backend::TensorRef grads[4] = {gate_grads[0].ref(narrow), gate_grads[1].ref(narrow),
                                             candidate_grads[0].ref(narrow),
                                             candidate_grads[1].ref(narrow)};
        kernels.normed_gru_cell_backward(
            norms, dgx.ref(narrow), dgh.ref(narrow), dh_prev.ref(narrow),
            {&grads[0], &grads[1], &grads[2], &grads[3]}, dh.ref(narrow),
            saved_activations.ref(narrow), saved_normalised.ref(narrow),
            saved_statistics.ref(narrow), gh.ref(narrow), h_prev.ref(narrow), &mask_refs[narrow]);
      }
      CHECK_NO_MISMATCH(twin_mismatch(dgx, "dgx"));
      CHECK_NO_MISMATCH(twin_mismatch(dgh, "dgh"));
      CHECK_NO_MISMATCH(twin_mismatch(dh_prev, "dh_prev"));
      CHECK_NO_MISMATCH(twin_mismatch(gate_grads[0], "the gates' gain gradient"));
      CHECK_NO_MISMATCH(twin_mismatch(gate_grads[1], "the gates' bias gradient"));
      CHECK_NO_MISMATCH(twin_mismatch(candidate_grads[0], "the candidate's gain gradient"));
      CHECK_NO_MISMATCH(twin_mismatch(candidate_grads[1], "the candidate's bias gradient"));
    }

    for (const bool state_norm : {true, false}) {
      CAPTURE(state_norm);
      // LSTM: RMSNorm on the state side (or none) and LayerNorm on the cell.
      const Affine state = affine(4 * H), cell = affine(H);
      const Twin gx = input_twin(device, {B, 4 * H}, generator),
                 gh = input_twin(device, {B, 4 * H}, generator, 2);
      const Twin h_prev = input_twin(device, {B, H}, generator),
                 c_prev = input_twin(device, {B, H}, generator);
      const Twin outputs = output_twin(device, {B, 2 * H}),
                 activations = output_twin(device, {B, 4 * H});
      const Twin cell_values = output_twin(device, {B, H}),
                 statistics = output_twin(device, {4, B}, true);
      const auto norms_for = [&](bool narrow) {
        backend::LstmStepNorms norms{.normalise_state = state_norm,
                                     .normalise_cell = true,
                                     .state = rms_norm_params(4 * H),
                                     .cell = layer_norm_params()};
        if (state_norm) {
          norms.state_gain = &state.refs[narrow][0];
          norms.state_bias = &state.refs[narrow][1];
        }
        norms.cell_gain = &cell.refs[narrow][0];
        norms.cell_bias = &cell.refs[narrow][1];
        return norms;
      };
      for (const bool narrow : {true, false}) {
        kernels.lstm_step_forward(norms_for(narrow), outputs.ref(narrow), activations.ref(narrow),
                                  cell_values.ref(narrow), statistics.ref(narrow), gx.ref(narrow),
                                  gh.ref(narrow), h_prev.ref(narrow), c_prev.ref(narrow),
                                  &mask_refs[narrow]);
      }
      CHECK_NO_MISMATCH(twin_mismatch(outputs, "[h | c]"));
      CHECK_NO_MISMATCH(twin_mismatch(activations, "activations"));
      CHECK_NO_MISMATCH(twin_mismatch(cell_values, "the normalised cell"));
      CHECK_NO_MISMATCH(twin_mismatch(statistics, "statistics"));

      const Twin saved_outputs{outputs.stored, to_float32(outputs.stored)};
      const Twin saved_activations{activations.stored, to_float32(activations.stored)};
      const Twin saved_cell{cell_values.stored, to_float32(cell_values.stored)};
      const Twin saved_statistics{statistics.stored, statistics.stored};
      const Twin dstate = input_twin(device, {B, 2 * H}, generator);
      const Twin dgx = output_twin(device, {B, 4 * H}), dgh = output_twin(device, {B, 4 * H});
      const Twin dh_prev = output_twin(device, {B, H}), dc_prev = output_twin(device, {B, H});
      const auto state_grads = gradients(4 * H), cell_grads = gradients(H);
      for (const bool narrow : {true, false}) {
        const backend::TensorRef grads[4] = {state_grads[0].ref(narrow), state_grads[1].ref(narrow),
                                             cell_grads[0].ref(narrow), cell_grads[1].ref(narrow)};
        backend::LstmStepNormGrads wanted{nullptr, nullptr, &grads[2], &grads[3]};
        if (state_norm) wanted.state_gain = &grads[0], wanted.state_bias = &grads[1];
        kernels.lstm_step_backward(
            norms_for(narrow), dgx.ref(narrow), dgh.ref(narrow), dh_prev.ref(narrow),
            dc_prev.ref(narrow), wanted, dstate.ref(narrow), saved_outputs.ref(narrow),
            saved_activations.ref(narrow), saved_cell.ref(narrow), saved_statistics.ref(narrow),
            gh.ref(narrow), c_prev.ref(narrow), &mask_refs[narrow]);
      }
      CHECK_NO_MISMATCH(twin_mismatch(dgx, "dgx"));
      CHECK_NO_MISMATCH(twin_mismatch(dgh, "dgh"));
      CHECK_NO_MISMATCH(twin_mismatch(dh_prev, "dh_prev"));
      CHECK_NO_MISMATCH(twin_mismatch(dc_prev, "dc_prev"));
      if (state_norm) {
        CHECK_NO_MISMATCH(twin_mismatch(state_grads[0], "the state norm's gain gradient"));
        CHECK_NO_MISMATCH(twin_mismatch(state_grads[1], "the state norm's bias gradient"));
      }
      CHECK_NO_MISMATCH(twin_mismatch(cell_grads[0], "the cell norm's gain gradient"));
      CHECK_NO_MISMATCH(twin_mismatch(cell_grads[1], "the cell norm's bias gradient"));
    }
  }
}

TEST_CASE_FIXTURE(GpuScratch, "bfloat16 kernels: recurrent steps copy nothing") {
  SKIP_WITHOUT_CUDA();  // the CPU computes bfloat16 on float32 copies by design
  // B x 3H float32 is 3 MiB: every operand's copy would be 1 to 4 MiB.
  const std::int64_t B = 256, H = 1024;
  const Tensor mask = to_bfloat16(ones({B}).to(gpu));
  const backend::TensorRef mask_ref = r(mask);
  {
    const Tensor gx = input({B, 3 * H}), gh = input({B, 3 * H}), h_prev = input({B, H});
    const Tensor dh = input({B, H});
    const Tensor h = output({B, H}), activations = output({B, 3 * H});
    const Tensor dgx = output({B, 3 * H}), dgh = output({B, 3 * H}), dh_prev = output({B, H});
    check_scratch("GRU cell", 0, [&] {
      kernels.gru_cell_forward(r(h), r(activations), r(gx), r(gh), r(h_prev), &mask_ref);
      kernels.gru_cell_backward(r(dgx), r(dgh), r(dh_prev), r(dh), r(activations), r(gh), r(h_prev),
                                &mask_ref);
    });
    // The normed step keeps dy (B x 3H float32) between its passes and writes the products for
    // the gains' gradients (B x 6H float32): 10 MiB in blocks, against some 26 MiB of copies.
    const Tensor gains[4] = {input({2 * H}), input({2 * H}), input({H}), input({H})};
    const backend::TensorRef gain_refs[4] = {r(gains[0]), r(gains[1]), r(gains[2]), r(gains[3])};
    const Tensor grads[4] = {output({2 * H}), output({2 * H}), output({H}), output({H})};
    const backend::TensorRef grad_refs[4] = {r(grads[0]), r(grads[1]), r(grads[2]), r(grads[3])};
    const backend::GruStateNorms norms{layer_norm_params(), rms_norm_params(H), &gain_refs[0],
                                       &gain_refs[1],       &gain_refs[2],      &gain_refs[3]};
    const Tensor normalised = output({B, 3 * H}), statistics = output({4, B}, DType::Float32);
    check_scratch("normed GRU step, forward", 0, [&] {
      kernels.normed_gru_cell_forward(norms, r(h), r(activations), r(normalised), r(statistics),
                                      r(gx), r(gh), r(h_prev), &mask_ref);
    });
    check_scratch(
        "normed GRU step, backward",
        allocator_block(B * 3 * H * float32_bytes) + allocator_block(B * 6 * H * float32_bytes),
        [&] {
          kernels.normed_gru_cell_backward(
              norms, r(dgx), r(dgh), r(dh_prev),
              {&grad_refs[0], &grad_refs[1], &grad_refs[2], &grad_refs[3]}, r(dh), r(activations),
              r(normalised), r(statistics), r(gh), r(h_prev), &mask_ref);
        });
  }
  {
    const Tensor gates = input({B, 4 * H}), c_prev = input({B, H}), dc = input({B, H});
    const Tensor c = output({B, H}), activations = output({B, 3 * H});
    const Tensor dgates = output({B, 4 * H}), dc_prev = output({B, H});
    check_scratch("LSTM cell", 0, [&] {
      kernels.lstm_cell_forward(r(c), r(activations), r(gates), r(c_prev), &mask_ref);
      kernels.lstm_cell_backward(r(dgates), r(dc_prev), r(dc), r(activations), r(c_prev),
                                 &mask_ref);
    });
    // The normed step keeps c and o forward (B x 2H float32, 2 MiB), the gate gradients
    // backward (B x 4H, 4 MiB) beside the products (B x 10H, 10 MiB): copies would take some
    // 18 MiB forward and 34 MiB backward.
    const Tensor gains[4] = {input({4 * H}), input({4 * H}), input({H}), input({H})};
    const backend::TensorRef gain_refs[4] = {r(gains[0]), r(gains[1]), r(gains[2]), r(gains[3])};
    const Tensor grads[4] = {output({4 * H}), output({4 * H}), output({H}), output({H})};
    const backend::TensorRef grad_refs[4] = {r(grads[0]), r(grads[1]), r(grads[2]), r(grads[3])};
    backend::LstmStepNorms norms{.normalise_state = true,
                                 .normalise_cell = true,
                                 .state = rms_norm_params(4 * H),
                                 .cell = layer_norm_params()};
    norms.state_gain = &gain_refs[0];
    norms.state_bias = &gain_refs[1];
    norms.cell_gain = &gain_refs[2];
    norms.cell_bias = &gain_refs[3];
    const Tensor gx = input({B, 4 * H}), gh = input({B, 4 * H}), h_prev = input({B, H});
    const Tensor state = output({B, 2 * H}), step_activations = output({B, 4 * H});
    const Tensor cell = output({B, H}), statistics = output({4, B}, DType::Float32);
    check_scratch("LSTM step, forward", allocator_block(B * 2 * H * float32_bytes), [&] {
      kernels.lstm_step_forward(norms, r(state), r(step_activations), r(cell), r(statistics), r(gx),
                                r(gh), r(h_prev), r(c_prev), &mask_ref);
    });
    const Tensor dstate = input({B, 2 * H});
    const Tensor dgx = output({B, 4 * H}), dgh = output({B, 4 * H}), dh_prev = output({B, H});
    check_scratch(
        "LSTM step, backward",
        allocator_block(B * 4 * H * float32_bytes) + allocator_block(B * 10 * H * float32_bytes),
        [&] {
          kernels.lstm_step_backward(norms, r(dgx), r(dgh), r(dh_prev), r(dc_prev),
                                     {&grad_refs[0], &grad_refs[1], &grad_refs[2], &grad_refs[3]},
                                     r(dstate), r(state), r(step_activations), r(cell),
                                     r(statistics), r(gh), r(c_prev), &mask_ref);
        });
  }
}

// The fused steps and the layers on bfloat16 data, through autograd: the float32 step's
// results on the rounded inputs, the layers in mixed precision with float32 parameters, and the
// same layers on a GPU against the CPU.

using namespace testing::bfloat16_checks;

namespace {

// A GRU or LSTM layer, initialised from `seed`.
std::shared_ptr<nn::Recurrent> recurrent_layer(bool lstm, std::int64_t input, std::int64_t hidden,
                                               const nn::RecurrentOptions& options,
                                               std::uint64_t seed) {
  Generator init(seed);
  if (lstm) return std::make_shared<nn::Lstm>(input, hidden, options, init);
  return std::make_shared<nn::Gru>(input, hidden, options, init);
}

}  // namespace

// The fused recurrent steps widen bfloat16 to float32 around their float32 kernels, so each
// output is the float32 step's on the rounded inputs (gains and biases rounded from their
// float32 parameters), rounded once. Backward reads what forward saved (activations, the
// normalised state side) as bfloat16, so the gradients are the float32 step's to within a
// few roundings, amplified by the norms' backward, which subtracts row means: 8u of the
// largest (u = 2^-8) is the bound held here (measured: 0.020 for the GRU's gh, 0.0056 for
// the LSTM's). The data's gradients are bfloat16, the gains' and biases' float32.
TEST_CASE("fused GRU and LSTM steps take bfloat16: the float32 step on the rounded inputs") {
  Generator generator(12);
  const std::int64_t batch = 5, hidden = 7;
  const Tensor mask = from_vector<float>({1, 1, 0, 1, 1}, {batch});
  const auto norm = [&](RowStatistic statistic, std::int64_t width) {
    return RowNorm{statistic,
                   0,
                   {},
                   (randn({width}, generator) * 0.3 + 1.0).requires_grad_(),
                   (randn({width}, generator) * 0.1).requires_grad_()};
  };
  // The same norm on float32 copies of the gain and bias as bfloat16 rounds them.
  const auto rounded = [](const RowNorm& n) {
    return RowNorm{n.statistic, n.k, n.options, f32(bf16(n.gain)).detach().requires_grad_(),
                   f32(bf16(n.bias)).detach().requires_grad_()};
  };
  const auto check_grads = [](const std::vector<Tensor>& mixed, const std::vector<Tensor>& exact) {
    for (std::size_t i = 0; i < mixed.size(); ++i) {
      CAPTURE(i);
      REQUIRE(mixed[i].grad().defined());
      const bool data = i < 4;  // gx, gh, h_prev (and c_prev): bfloat16 like the data
      CHECK(mixed[i].grad().dtype() == (data ? DType::BFloat16 : DType::Float32));
      const double largest = exact[i].grad().abs().max().item();
      const double error = (f32(mixed[i].grad()) - exact[i].grad()).abs().max().item();
      CAPTURE(error / largest);
      CHECK(error <= 8 * unit * largest);
    }
  };

  SUBCASE("GRU, LayerNorm on the gates, RMSNorm on the candidate") {
    const GruStateNorms norms{norm(RowStatistic::Variance, 2 * hidden),
                              norm(RowStatistic::MeanSquare, hidden)};
    const GruStateNorms exact_norms{rounded(norms.gates), rounded(norms.candidate)};
    const Tensor gx = bf16(randn({batch, 3 * hidden}, generator)).requires_grad_();
    const Tensor gh = bf16(randn({batch, 3 * hidden}, generator)).requires_grad_();
    const Tensor h = bf16(randn({batch, hidden}, generator)).requires_grad_();
    const Tensor gx32 = f32(gx).detach().requires_grad_(), gh32 = f32(gh).detach().requires_grad_();
    const Tensor h32 = f32(h).detach().requires_grad_();
    const Tensor upstream = bf16(randn({batch, hidden}, generator));
    const Tensor out = normed_gru_step(gx, gh, h, norms, bf16(mask));
    const Tensor exact = normed_gru_step(gx32, gh32, h32, exact_norms, mask);
    CHECK(same_bits(out, bf16(exact)));
    (f32(out) * f32(upstream)).sum().backward();
    (exact * f32(upstream)).sum().backward();
    const Tensor gx_again = gx;  // the list's fourth place holds data in the LSTM's case
    check_grads({gx, gh, h, gx_again, norms.gates.gain, norms.gates.bias, norms.candidate.gain,
                 norms.candidate.bias},
                {gx32, gh32, h32, gx32, exact_norms.gates.gain, exact_norms.gates.bias,
                 exact_norms.candidate.gain, exact_norms.candidate.bias});
    // The plain fused step too.
    CHECK(same_bits(gru_step(gx, gh, h, bf16(mask)), bf16(gru_step(gx32, gh32, h32, mask))));
  }
  SUBCASE("LSTM, RMSNorm on the state side and LayerNorm on the cell") {
    LstmStepNorms norms{norm(RowStatistic::MeanSquare, 4 * hidden),
                        norm(RowStatistic::Variance, hidden)};
    LstmStepNorms exact_norms{rounded(*norms.state), rounded(*norms.cell)};
    const Tensor gx = bf16(randn({batch, 4 * hidden}, generator)).requires_grad_();
    const Tensor gh = bf16(randn({batch, 4 * hidden}, generator)).requires_grad_();
    const Tensor h = bf16(randn({batch, hidden}, generator)).requires_grad_();
    const Tensor c = bf16(randn({batch, hidden}, generator)).requires_grad_();
    const Tensor gx32 = f32(gx).detach().requires_grad_(), gh32 = f32(gh).detach().requires_grad_();
    const Tensor h32 = f32(h).detach().requires_grad_(), c32 = f32(c).detach().requires_grad_();
    const auto [h_out, c_out] = lstm_step(gx, gh, h, c, norms, bf16(mask));
    const auto [h_exact, c_exact] = lstm_step(gx32, gh32, h32, c32, exact_norms, mask);
    CHECK(same_bits(h_out, bf16(h_exact)));
    CHECK(same_bits(c_out, bf16(c_exact)));
    const Tensor dh = bf16(randn({batch, hidden}, generator));
    const Tensor dc = bf16(randn({batch, hidden}, generator));
    (f32(h_out) * f32(dh) + f32(c_out) * f32(dc)).sum().backward();
    (h_exact * f32(dh) + c_exact * f32(dc)).sum().backward();
    check_grads(
        {gx, gh, h, c, norms.state->gain, norms.state->bias, norms.cell->gain, norms.cell->bias},
        {gx32, gh32, h32, c32, exact_norms.state->gain, exact_norms.state->bias,
         exact_norms.cell->gain, exact_norms.cell->bias});
  }
}

// A float32 recurrent layer runs bfloat16 input (mixed precision): every norm kind of the
// paper's cells, fused and composed, against the same layer on float32 input.
TEST_CASE("GRU and LSTM layers run bfloat16 input with float32 parameters") {
  Generator generator(13);
  const Tensor x = randn({6, 3, 10}, generator);  // [T, B, I]
  const Tensor lengths_mask =
      testing::int_mask({{1, 1, 1, 1, 1, 1}, {1, 1, 1, 1, 0, 0}, {1, 1, 1, 1, 1, 1}})
          .t()
          .to(DType::Float32);
  // The same lengths, run packed: the rows are sorted (an index_select of the bfloat16 input)
  // and the input's gradient gathered back (an index_add).
  const Tensor lengths = tensor({6, 4, 6}, {.dtype = DType::Int64});
  for (const std::string norm : {"none", "layernorm", "rmsnorm", "prmsnorm:0.25"}) {
    for (const bool lstm : {false, true}) {
      for (const bool fused : {true, false}) {
        for (const bool packed : {false, true}) {
          CAPTURE(norm);
          CAPTURE(lstm);
          CAPTURE(fused);
          CAPTURE(packed);
          const nn::RecurrentOptions options{
              .cell = {.norm = nn::NormSpec::parse(norm), .fused = fused}};
          const std::shared_ptr<nn::Recurrent> layer = recurrent_layer(lstm, 10, 32, options, 5);
          Tensor outputs[2];
          std::vector<Tensor> grads[2];
          for (const bool mixed : {false, true}) {
            layer->zero_grad();
            const Tensor input = x.detach().requires_grad_();
            const Tensor cast = mixed ? bf16(input) : input;
            outputs[mixed] = packed ? layer->forward_lengths(cast, lengths).output
                                    : layer->forward(cast, lengths_mask).output;
            f32(outputs[mixed]).square().sum().backward();
            for (const Tensor& p : layer->parameters()) grads[mixed].push_back(p.grad());
            grads[mixed].push_back(input.grad());
          }
          CHECK(outputs[1].dtype() == DType::BFloat16);
          // Values in (-1, 1) after a few bfloat16 roundings a step, over six steps: within 2^-4.
          const double value_error = (f32(outputs[1]) - outputs[0]).abs().max().item();
          CAPTURE(value_error);
          CHECK(value_error <= 0x1p-4);
          check_parameter_grads(grads[1], grads[0], 0x1p-3);
        }
      }
    }
  }
}

TEST_CASE("cuda parity: bfloat16 GRU and LSTM layers with their norms, forward and backward") {
  SKIP_PARITY_WITHOUT_CUDA();
  // Both devices run the fused steps' float32 arithmetic (the GPU natively on bfloat16, the
  // CPU on float32 copies), which agrees to float32 rounding; after bfloat16 roundings of the state
  // at each of six steps, the outputs agree within 2^-5 and the parameters' and the input's
  // gradients within 2^-5 of the largest. Packed, with unsorted lengths, the rows are sorted by a
  // bfloat16 index_select, whose backward is a bfloat16 index_add.
  Generator generator(14);
  const Tensor x = bf16(randn({6, 4, 12}, generator));
  const Tensor lengths = tensor({4, 6, 2, 5}, {.dtype = DType::Int64});
  for (const bool lstm : {false, true}) {
    for (const bool packed : {false, true}) {
      CAPTURE(lstm);
      CAPTURE(packed);
      const nn::RecurrentOptions options{.cell = {.norm = "rmsnorm"}};
      Tensor outputs[2];
      std::vector<Tensor> grads[2];
      for (int device = 0; device < 2; ++device) {
        const Device where = device == 0 ? Device::cpu() : testing::parity_device();
        const std::shared_ptr<nn::Recurrent> layer = recurrent_layer(lstm, 12, 16, options, 6);
        layer->to(where);
        const Tensor input = f32(x).to(where).requires_grad_();
        outputs[device] = packed ? layer->forward_lengths(bf16(input), lengths.to(where)).output
                                 : layer->forward(bf16(input)).output;
        f32(outputs[device]).square().sum().backward();
        outputs[device] = outputs[device].to(Device::cpu());
        for (const Tensor& p : layer->parameters())
          grads[device].push_back(p.grad().to(Device::cpu()));
        grads[device].push_back(input.grad().to(Device::cpu()));
      }
      CHECK(outputs[1].dtype() == DType::BFloat16);
      CHECK((f32(outputs[1]) - f32(outputs[0])).abs().max().item() <= 0x1p-5);
      check_parameter_grads(grads[1], grads[0], 0x1p-5);
    }
  }
}
