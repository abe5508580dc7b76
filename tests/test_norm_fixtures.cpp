// The normalisers against golden values computed independently with PyTorch in float64
// (fixtures/generate_norms.py writes fixtures/norms.json): outputs and the gradients for x,
// gain and bias of sum(y * dy), through the public modules (the fused kernels) and through the
// composed twins. Agreement is asked to about 1e-10 relative: both sides compute in float64,
// so anything looser would hide a wrong formula behind rounding.

#include <functional>
#include <memory>
#include <string>

#include "fixture_helpers.h"

using namespace normgrad;
using testing::json;

namespace {

const json& fixture() { return testing::fixture_file("norms.json"); }

Tensor tensor(const json& values, const Shape& shape) {
  return from_vector(values.get<std::vector<double>>(), shape);
}

void check_close(const Tensor& actual, const json& c, const char* key) {
  testing::check_fixture_close(actual, c, key);
}

EpsPlacement placement(const json& c) {
  return c["placement"] == "outside" ? EpsPlacement::OutsideSqrt : EpsPlacement::InsideSqrt;
}

nn::PartialRounding rounding(const json& c) {
  return c["rounding"] == "floor" ? nn::PartialRounding::Floor : nn::PartialRounding::Ceil;
}

Shape affine_shape(const json& c) {
  return c["per_channel"].get<bool>() ? Shape{c["x_shape"][1].get<std::int64_t>()}
                                      : c["normalized_shape"].get<Shape>();
}

using Forward = std::function<Tensor(const Tensor& x)>;

// Runs `forward` on the fixture's x, backpropagates its dy, and checks y, dx and the gradients
// that reach `gain` and `bias` (the leaves the forward uses; undefined when the case has none).
void check_against_fixture(const json& c, const Forward& forward, const Tensor& gain,
                           const Tensor& bias) {
  const Shape x_shape = c["x_shape"].get<Shape>();
  const Tensor x = tensor(c["x"], x_shape).requires_grad_();
  const Tensor y = forward(x);
  CHECK(y.shape() == x_shape);
  y.backward(tensor(c["dy"], x_shape));
  check_close(y, c, "y");
  check_close(x.grad(), c, "dx");
  REQUIRE(gain.defined() == c.contains("gain"));
  REQUIRE(bias.defined() == c.contains("bias"));
  if (gain.defined()) check_close(gain.grad(), c, "dgain");
  if (bias.defined()) check_close(bias.grad(), c, "dbias");
}

// The module the case describes, with the fixture's gain and bias copied into its parameters.
std::pair<std::shared_ptr<nn::AffineNorm>, Forward> build_module(const json& c) {
  const Shape shape = c["normalized_shape"].get<Shape>();
  const auto eps = c["eps"].get<double>();
  const bool gain = c.contains("gain"), bias = c.contains("bias");
  const auto per_channel = c["per_channel"].get<bool>();
  std::shared_ptr<nn::AffineNorm> module;
  Forward forward;
  if (c["kind"] == "layer_norm") {
    auto norm =
        std::make_shared<nn::LayerNorm>(shape, nn::LayerNormOptions{.eps = eps,
                                                                    .gain = gain,
                                                                    .bias = bias,
                                                                    .per_channel = per_channel,
                                                                    .dtype = DType::Float64});
    module = norm;
    forward = [norm](const Tensor& x) { return norm->forward(x); };
  } else if (c["kind"] == "l2_norm") {
    auto norm = std::make_shared<nn::L2Norm>(shape, nn::L2NormOptions{.eps = eps,
                                                                      .gain = gain,
                                                                      .bias = bias,
                                                                      .per_channel = per_channel,
                                                                      .dtype = DType::Float64});
    module = norm;
    forward = [norm](const Tensor& x) { return norm->forward(x); };
  } else {
    REQUIRE(c["kind"] == "rms_norm");
    nn::RMSNormOptions options{.eps = eps,
                               .placement = placement(c),
                               .gain = gain,
                               .bias = bias,
                               .per_channel = per_channel,
                               .dtype = DType::Float64};
    if (c.contains("partial")) {
      options.partial = c["partial"].get<double>();
      options.rounding = rounding(c);
    }
    auto norm = std::make_shared<nn::RMSNorm>(shape, options);
    module = norm;
    forward = [norm](const Tensor& x) { return norm->forward(x); };
  }
  NoGradGuard no_grad;
  if (module->gain.defined()) module->gain.copy_(tensor(c["gain"], module->gain.shape()));
  if (module->bias.defined()) module->bias.copy_(tensor(c["bias"], module->bias.shape()));
  return {module, forward};
}

// Calls `body` for each feature-form and per-channel case of the given kind; returns the count.
int for_each_case(const std::string& kind, const std::function<void(const json&)>& body) {
  int count = 0;
  for (const json& c : fixture()["norms"]) {
    if (c["kind"] != kind) continue;
    CAPTURE(c["name"].get<std::string>());
    body(c);
    ++count;
  }
  return count;
}

void check_module(const json& c) {
  const auto [module, forward] = build_module(c);
  check_against_fixture(c, forward, module->gain, module->bias);
}

// The composed twin, on fresh leaves holding the fixture's gain and bias.
void check_composed(const json& c) {
  const Shape affine = affine_shape(c);
  const Tensor gain = c.contains("gain") ? tensor(c["gain"], affine).requires_grad_() : Tensor();
  const Tensor bias = c.contains("bias") ? tensor(c["bias"], affine).requires_grad_() : Tensor();
  const auto per_channel = c["per_channel"].get<bool>();
  const auto dims = per_channel ? 2 : static_cast<std::int64_t>(c["normalized_shape"].size());
  const auto eps = c["eps"].get<double>();
  const auto kind = c["kind"].get<std::string>();
  const Forward forward = [&](const Tensor& x) {
    // Per channel, gain and bias [C] broadcast over the H x W of each map.
    const auto broadcast = [&](const Tensor& t) {
      return t.defined() && per_channel ? t.view({-1, 1, 1}) : t;
    };
    const Tensor g = broadcast(gain), b = broadcast(bias);
    if (kind == "layer_norm") return nn::layer_norm_composed(x, dims, g, b, eps);
    if (kind == "l2_norm") return nn::l2_norm_composed(x, dims, g, b, eps);
    if (c.contains("k"))
      return nn::partial_rms_norm_composed(x, dims, c["k"].get<std::int64_t>(), g, b, eps,
                                           placement(c));
    return nn::rms_norm_composed(x, dims, g, b, eps, placement(c));
  };
  check_against_fixture(c, forward, gain, bias);
}

}  // namespace

TEST_CASE("the norm fixture was written in float64 by PyTorch") {
  CHECK(fixture()["dtype"] == "float64");
  CHECK_FALSE(fixture()["torch_version"].get<std::string>().empty());
}

TEST_CASE("LayerNorm matches PyTorch: outputs and gradients for x, gain and bias") {
  // n = 1, 7, 33, no affine, 3-d inputs with 1-d and 2-d groups, and the per-channel form.
  CHECK(for_each_case("layer_norm", check_module) >= 7);
}

TEST_CASE("RMSNorm and pRMSNorm match PyTorch, eps inside and outside the square root") {
  CHECK(for_each_case("rms_norm", check_module) >= 20);
}

TEST_CASE("pRMSNorm takes k = ceil(n p) or floor(n p) values, at least 1, as the fixture does") {
  int partial_cases = 0;
  for_each_case("rms_norm", [&](const json& c) {
    if (!c.contains("k")) return;
    const Shape x_shape = c["x_shape"].get<Shape>();
    const std::size_t group_rank = c["per_channel"].get<bool>() ? 2 : c["normalized_shape"].size();
    std::int64_t n = 1;
    for (std::size_t d = x_shape.size() - group_rank; d < x_shape.size(); ++d) n *= x_shape[d];
    CHECK(nn::partial_count(n, c["partial"].get<double>(), rounding(c)) ==
          c["k"].get<std::int64_t>());
    ++partial_cases;
  });
  CHECK(partial_cases >= 8);
}

TEST_CASE("L2Norm matches PyTorch") { CHECK(for_each_case("l2_norm", check_module) >= 5); }

TEST_CASE("the composed twins match PyTorch too") {
  int count = 0;
  for (const char* kind : {"layer_norm", "rms_norm", "l2_norm"})
    count += for_each_case(kind, check_composed);
  CHECK(count == static_cast<int>(fixture()["norms"].size()));
}

// ---- BatchNorm and WeightNorm ------------------------------------------------------------------

TEST_CASE("BatchNorm1d and BatchNorm2d match PyTorch: train and eval, running estimates too") {
  const json& cases = fixture()["batch_norm"];
  REQUIRE(cases.size() >= 4);
  for (const json& c : cases) {
    CAPTURE(c["name"].get<std::string>());
    const Shape x_shape = c["x_shape"].get<Shape>();
    const auto channels = c["channels"].get<std::int64_t>();
    const nn::BatchNormOptions options{.eps = c["eps"].get<double>(),
                                       .momentum = c["momentum"].get<double>(),
                                       .dtype = DType::Float64};
    std::unique_ptr<nn::BatchNorm> norm;
    if (x_shape.size() == 4)
      norm = std::make_unique<nn::BatchNorm2d>(channels, options);
    else
      norm = std::make_unique<nn::BatchNorm1d>(channels, options);
    {
      NoGradGuard no_grad;
      norm->gain.copy_(tensor(c["gain"], {channels}));
      norm->bias.copy_(tensor(c["bias"], {channels}));
      norm->running_mean.copy_(tensor(c["running_mean"], {channels}));
      norm->running_var.copy_(tensor(c["running_var"], {channels}));
    }
    norm->train(c["train"].get<bool>());
    const Tensor x = tensor(c["x"], x_shape).requires_grad_();
    const Tensor y = norm->forward(x);
    y.backward(tensor(c["dy"], x_shape));
    check_close(y, c, "y");
    check_close(x.grad(), c, "dx");
    check_close(norm->gain.grad(), c, "dgain");
    check_close(norm->bias.grad(), c, "dbias");
    check_close(norm->running_mean, c, "running_mean_after");
    check_close(norm->running_var, c, "running_var_after");
  }
}

TEST_CASE("a Linear weight through WeightNorm matches PyTorch") {
  const json& cases = fixture()["weight_norm"];
  REQUIRE_FALSE(cases.empty());
  for (const json& c : cases) {
    CAPTURE(c["name"].get<std::string>());
    const auto in = c["in_features"].get<std::int64_t>(),
               out = c["out_features"].get<std::int64_t>();
    const Shape x_shape = c["x_shape"].get<Shape>();
    nn::WeightNorm weight_norm(zeros({out, in}, {.dtype = DType::Float64}) + 1.0);
    {
      NoGradGuard no_grad;
      weight_norm.direction.copy_(tensor(c["v"], {out, in}));
      weight_norm.gain.copy_(tensor(c["g"], {out}));
    }
    const Tensor x = tensor(c["x"], x_shape).requires_grad_();
    const Tensor bias = tensor(c["bias"], {out}).requires_grad_();
    const Tensor weight = weight_norm.weight();
    const Tensor y = matmul(x, weight.t()) + bias;
    Shape y_shape = x_shape;
    y_shape.back() = out;
    REQUIRE(y.shape() == y_shape);
    y.backward(tensor(c["dy"], y_shape));
    check_close(weight, c, "weight");
    check_close(y, c, "y");
    check_close(x.grad(), c, "dx");
    check_close(weight_norm.gain.grad(), c, "dg");
    check_close(weight_norm.direction.grad(), c, "dv");
    check_close(bias.grad(), c, "dbias");
  }
}
