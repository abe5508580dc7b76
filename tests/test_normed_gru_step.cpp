// The GRU step with its state side's norms fused into it (normed_gru_step):
// against its composed twin for every row norm, with and without a mask, in float32 and
// float64; float64 gradient checks of every input and of the norms' gains and biases; the
// cells that take it; and errors for norms it cannot take.

#include <string>
#include <vector>

#include "module_gradcheck.h"
#include "state_norm_variants.h"

using namespace normgrad;
using testing::affine_of;
using testing::all_close;
using testing::leaf;
using testing::state_norms;
using testing::Variant;
using testing::variants;
using testing::with_affine;

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
          return normed_gru_step(in[0], in[1], in[2], with_affine(norms, in, 3),
                                                 mask);
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
    const nn::NamedTensors pa = fused.named_parameters(), pb = composed.named_parameters();
    REQUIRE(pa.size() == pb.size());
    for (std::size_t i = 0; i < pa.size(); ++i) {
      INFO(pa[i].first);
      CHECK(all_close(pa[i].second.grad(), pb[i].second.grad(), 1e-12, 1e-12));
    }
  }
}

TEST_CASE("normed_gru_step refuses norms it cannot apply, naming them") {
  const Variant rms = variants[1];
  const Tensor gx = leaf({2, 9}), gh = leaf({2, 9}), h = leaf({2, 3});
  GruStateNorms norms = state_norms(rms, 3, DType::Float64);
  norms.candidate.gain = leaf({4});
  CHECK_ERROR(normed_gru_step(gx, gh, h, norms), "normed_gru_step",
              "candidate norm's gain", "[3]");
  norms = state_norms(rms, 3, DType::Float64);
  norms.gates.gain = norms.gates.gain.to(DType::Float32);
  CHECK_ERROR(normed_gru_step(gx, gh, h, norms), "normed_gru_step");
  norms = state_norms(rms, 3, DType::Float64);
  norms.gates.k = 7;
  CHECK_ERROR(normed_gru_step(gx, gh, h, norms), "normed_gru_step",
              "gates norm's k = 7");
  norms = state_norms(rms, 3, DType::Float64);
  norms.candidate.options.per_channel = true;
  CHECK_ERROR(normed_gru_step(gx, gh, h, norms), "normed_gru_step", "per channel");
  norms = state_norms(rms, 3, DType::Float64);
  norms.gates.options.eps = -1;
  CHECK_ERROR(normed_gru_step(gx, gh, h, norms), "eps must be non-negative");
  CHECK_ERROR(normed_gru_step(gx, leaf({2, 8}), h, norms), "normed_gru_step",
              "gh must be [2, 9]");
}
