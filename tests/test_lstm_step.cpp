// The LSTM step after its GEMM, fused with its state and cell norms
// (lstm_step): against its composed twin for every row norm and for none, with
// and without a mask, in float32 and float64, through h and c; float64 gradient checks of
// every input and of the norms' gains and biases; the cells that take it; and errors.

#include <string>
#include <vector>

#include "module_gradcheck.h"
#include "state_norm_variants.h"

using namespace normgrad;
using testing::affine_of;
using testing::all_close;
using testing::leaf;
using testing::lstm_norms;
using testing::Variant;
using testing::variants;
using testing::with_affine;

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
        const std::array<Tensor, 2> composed =
            lstm_step_composed(gx, gh, h, c, norms, mask);
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
          const std::array<Tensor, 2> state = lstm_step(
              in[0], in[1], in[2], in[3], with_affine(norms, in, 4), mask);
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
    const nn::NamedTensors pa = fused.named_parameters(), pb = composed.named_parameters();
    REQUIRE(pa.size() == pb.size());
    for (std::size_t i = 0; i < pa.size(); ++i) {
      INFO(pa[i].first);
      CHECK(all_close(pa[i].second.grad(), pb[i].second.grad(), 1e-12, 1e-12));
    }
  }
}

TEST_CASE("lstm_step refuses operands and norms it cannot take, naming them") {
  const Tensor gx = leaf({2, 12}), gh = leaf({2, 12}), h = leaf({2, 3}), c = leaf({2, 3});
  LstmStepNorms norms = lstm_norms(variants[1], 3, DType::Float64);
  CHECK_ERROR(lstm_step(gx, leaf({2, 9}), h, c, norms), "lstm_step",
              "gh must be [2, 12]");
  CHECK_ERROR(lstm_step(gx, gh, h, leaf({2, 4}), norms), "lstm_step", "c_prev");
  norms.cell->gain = leaf({4});
  CHECK_ERROR(lstm_step(gx, gh, h, c, norms), "lstm_step", "cell norm's gain",
              "[3]");
  norms = lstm_norms(variants[1], 3, DType::Float64);
  norms.state->k = 13;
  CHECK_ERROR(lstm_step(gx, gh, h, c, norms), "lstm_step", "state norm's k = 13");
}
