// The fused normalisers (nn/norms/fused.h) against their composed twins, through autograd,
// and against finite differences.

#include "helpers.h"

using namespace normgrad;
using testing::all_close;
using testing::leaf;
using Inputs = std::vector<Tensor>;

namespace {

const Tensor none;

using NormFunction = std::function<Tensor(const Tensor& x, const Tensor& gain, const Tensor& bias)>;

// Forward values and the gradients of sum(f(x) * dy) for x, gain and bias agree.
void check_against_twin(const NormFunction& fused, const NormFunction& composed, const Shape& shape,
                        const Shape& affine_shape, DType dtype, double rtol) {
  Generator generator(17);
  const TensorOptions options{.dtype = dtype};
  const Tensor x0 = randn(shape, generator, options) * 3.0 + 0.5;
  const Tensor g0 = randn(affine_shape, generator, options);
  const Tensor b0 = randn(affine_shape, generator, options);
  const Tensor dy = randn(shape, generator, options);
  std::vector<Tensor> grads[2];
  Tensor outputs[2];
  for (int which = 0; which < 2; ++which) {
    Tensor x = x0.clone().requires_grad_(), g = g0.clone().requires_grad_(),
           b = b0.clone().requires_grad_();
    outputs[which] = (which == 0 ? fused : composed)(x, g, b);
    (outputs[which] * dy).sum().backward();
    grads[which] = {x.grad(), g.grad(), b.grad()};
  }
  CHECK(all_close(outputs[0], outputs[1], rtol, rtol));
  for (int i = 0; i < 3; ++i) {
    CAPTURE(i);
    CHECK(all_close(grads[0][i], grads[1][i], rtol, rtol * 10));
  }
}

}  // namespace

TEST_CASE("fused normalisers match their composed twins, forward and backward") {
  const auto outside = nn::NormOptions{.eps = 1e-3, .placement = nn::EpsPlacement::OutsideSqrt};
  for (DType dtype : {DType::Float32, DType::Float64}) {
    const double rtol = dtype == DType::Float32 ? 2e-5 : 1e-11;
    for (std::int64_t n : {1, 7, 33, 1000}) {
      CAPTURE(n);
      const Shape shape{5, n};
      const Shape affine{n};
      check_against_twin([](auto& x, auto& g, auto& b) { return nn::layer_norm(x, 1, g, b); },
                         [](auto& x, auto& g, auto& b) { return nn::layer_norm_composed(x, 1, g, b, 1e-5); },
                         shape, affine, dtype, rtol);
      check_against_twin([](auto& x, auto& g, auto& b) { return nn::rms_norm(x, 1, g, b); },
                         [](auto& x, auto& g, auto& b) { return nn::rms_norm_composed(x, 1, g, b, 1e-5); },
                         shape, affine, dtype, rtol);
      check_against_twin([outside](auto& x, auto& g, auto& b) { return nn::rms_norm(x, 1, g, b, outside); },
                         [](auto& x, auto& g, auto& b) { return nn::rms_norm_composed(x, 1, g, b, 1e-3, nn::EpsPlacement::OutsideSqrt); },
                         shape, affine, dtype, rtol);
      const std::int64_t k = nn::partial_count(n, 0.0625, nn::PartialRounding::Ceil);
      check_against_twin([k](auto& x, auto& g, auto& b) { return nn::partial_rms_norm(x, 1, k, g, b); },
                         [k](auto& x, auto& g, auto& b) { return nn::partial_rms_norm_composed(x, 1, k, g, b, 1e-5); },
                         shape, affine, dtype, rtol);
      check_against_twin([](auto& x, auto& g, auto& b) { return nn::l2_norm(x, 1, g, b); },
                         [](auto& x, auto& g, auto& b) { return nn::l2_norm_composed(x, 1, g, b, 1e-5); },
                         shape, affine, dtype, rtol);
    }
    // The spatial form: [N, C, H, W], per-channel gain and bias.
    const nn::NormOptions spatial{.eps = 1e-6, .per_channel = true};
    check_against_twin([spatial](auto& x, auto& g, auto& b) { return nn::rms_norm(x, 2, g, b, spatial); },
                       [](auto& x, auto& g, auto& b) {
                         return nn::rms_norm_composed(x, 2, g.view({-1, 1, 1}), b.view({-1, 1, 1}), 1e-6);
                       },
                       {2, 3, 4, 5}, {3}, dtype, rtol);
    check_against_twin([spatial](auto& x, auto& g, auto& b) { return nn::layer_norm(x, 2, g, b, spatial); },
                       [](auto& x, auto& g, auto& b) {
                         return nn::layer_norm_composed(x, 2, g.view({-1, 1, 1}), b.view({-1, 1, 1}), 1e-6);
                       },
                       {2, 3, 4, 5}, {3}, dtype, rtol);
  }
}

TEST_CASE("fused normalisers match their twins on non-contiguous inputs") {
  // x is drawn as [n, 6] and normalised as its transpose [6, n]: every row is strided. The
  // output is transposed back so that the check sees x's shape.
  for (DType dtype : {DType::Float32, DType::Float64}) {
    const double rtol = dtype == DType::Float32 ? 2e-5 : 1e-11;
    for (std::int64_t n : {7, 1000}) {
      CAPTURE(n);
      const std::int64_t k = nn::partial_count(n, 0.0625, nn::PartialRounding::Ceil);
      check_against_twin([](auto& x, auto& g, auto& b) { return nn::layer_norm(x.t(), 1, g, b).t(); },
                         [](auto& x, auto& g, auto& b) { return nn::layer_norm_composed(x.t(), 1, g, b, 1e-5).t(); },
                         {n, 6}, {n}, dtype, rtol);
      check_against_twin([](auto& x, auto& g, auto& b) { return nn::rms_norm(x.t(), 1, g, b).t(); },
                         [](auto& x, auto& g, auto& b) { return nn::rms_norm_composed(x.t(), 1, g, b, 1e-5).t(); },
                         {n, 6}, {n}, dtype, rtol);
      check_against_twin([k](auto& x, auto& g, auto& b) { return nn::partial_rms_norm(x.t(), 1, k, g, b).t(); },
                         [k](auto& x, auto& g, auto& b) { return nn::partial_rms_norm_composed(x.t(), 1, k, g, b, 1e-5).t(); },
                         {n, 6}, {n}, dtype, rtol);
      check_against_twin([](auto& x, auto& g, auto& b) { return nn::l2_norm(x.t(), 1, g, b).t(); },
                         [](auto& x, auto& g, auto& b) { return nn::l2_norm_composed(x.t(), 1, g, b, 1e-5).t(); },
                         {n, 6}, {n}, dtype, rtol);
    }
  }
}

TEST_CASE("fused normalisers match their twins on slices of wider rows") {
  // x is drawn as [5, n + 7] and its columns [3, 3 + n) are normalised in place, the rest passed
  // through, as a recurrent cell normalises its gates within its projection: the kernels read x
  // and (through cat's backward) dy with strided rows.
  for (DType dtype : {DType::Float32, DType::Float64}) {
    const double rtol = dtype == DType::Float32 ? 2e-5 : 1e-11;
    for (std::int64_t n : {1, 8, 1000}) {
      CAPTURE(n);
      const auto within = [n](const Tensor& x, const Tensor& normalised) {
        return cat({x.narrow(1, 0, 3), normalised, x.narrow(1, 3 + n, 4)}, 1);
      };
      const auto slice = [n](const Tensor& x) { return x.narrow(1, 3, n); };
      const std::int64_t k = nn::partial_count(n, 0.0625, nn::PartialRounding::Ceil);
      check_against_twin([=](auto& x, auto& g, auto& b) { return within(x, nn::layer_norm(slice(x), 1, g, b)); },
                         [=](auto& x, auto& g, auto& b) { return within(x, nn::layer_norm_composed(slice(x), 1, g, b, 1e-5)); },
                         {5, n + 7}, {n}, dtype, rtol);
      check_against_twin([=](auto& x, auto& g, auto& b) { return within(x, nn::rms_norm(slice(x), 1, g, b)); },
                         [=](auto& x, auto& g, auto& b) { return within(x, nn::rms_norm_composed(slice(x), 1, g, b, 1e-5)); },
                         {5, n + 7}, {n}, dtype, rtol);
      check_against_twin([=](auto& x, auto& g, auto& b) { return within(x, nn::partial_rms_norm(slice(x), 1, k, g, b)); },
                         [=](auto& x, auto& g, auto& b) { return within(x, nn::partial_rms_norm_composed(slice(x), 1, k, g, b, 1e-5)); },
                         {5, n + 7}, {n}, dtype, rtol);
    }
  }
}

TEST_CASE("gradcheck: fused normalisers, with and without gain and bias") {
  const Tensor x = leaf({4, 9}, 1, 2.0), g = leaf({9}, 2), b = leaf({9}, 3);
  CHECK_GRADIENTS([](const Inputs& in) { return nn::layer_norm(in[0], 1, in[1], in[2]); }, {x, g, b});
  CHECK_GRADIENTS([](const Inputs& in) { return nn::rms_norm(in[0], 1, in[1], none); }, {x, g});
  CHECK_GRADIENTS([](const Inputs& in) { return nn::rms_norm(in[0], 1, none, in[1]); }, {x, b});
  CHECK_GRADIENTS([](const Inputs& in) {
    return nn::rms_norm(in[0], 1, in[1], none, {.eps = 1e-3, .placement = nn::EpsPlacement::OutsideSqrt});
  }, {x, g});
  CHECK_GRADIENTS([](const Inputs& in) { return nn::partial_rms_norm(in[0], 1, 3, in[1], in[2]); }, {x, g, b});
  CHECK_GRADIENTS([](const Inputs& in) { return nn::l2_norm(in[0], 1, in[1], none); }, {x, g});
  CHECK_GRADIENTS([](const Inputs& in) { return nn::rms_norm(in[0], 2, in[1], in[2], {.per_channel = true}); },
                  {leaf({2, 3, 2, 2}, 4), leaf({3}, 5), leaf({3}, 6)});
  // Non-contiguous input.
  CHECK_GRADIENTS([](const Inputs& in) { return nn::layer_norm(in[0].t(), 1, none, none); }, {leaf({9, 4}, 7)});
}

TEST_CASE("rows of zeros stay finite, and the fused LayerNorm is precise for large means") {
  const Tensor zero_rows = zeros({3, 16}).requires_grad_();
  const Tensor y = nn::rms_norm(zero_rows, 1, none, none);
  CHECK(y.abs().sum().item() == 0);
  y.sum().backward();
  CHECK(std::isfinite(zero_rows.grad().abs().sum().item()));
  CHECK(std::isfinite(nn::layer_norm(zeros({3, 16}), 1, none, none).abs().sum().item()));

  // The reference sees the same float32 values, in float64: what is measured is the kernel's
  // own arithmetic, which must not cancel catastrophically (no E[x^2] - E[x]^2).
  Generator generator(3);
  for (double offset : {1e4, 1e5, 1e6}) {
    CAPTURE(offset);
    const Tensor big = (randn({8, 1024}, generator, {.dtype = DType::Float64}) * 1e-2 + offset).to(DType::Float32);
    const Tensor exact = nn::layer_norm_composed(big.to(DType::Float64), 1, none, none, 1e-5);
    CHECK(all_close(nn::layer_norm(big, 1, none, none).to(DType::Float64), exact, 1e-5, 1e-5));
  }
}

TEST_CASE("fused normalisers refuse bad arguments") {
  CHECK_ERROR(nn::rms_norm(zeros({2, 3}), 1, zeros({4}), none), "rms_norm", "gain", "[3]", "[4]");
  CHECK_ERROR(nn::layer_norm(zeros({2, 3}), 1, none, zeros({3}, {.dtype = DType::Float64})), "layer_norm", "float64");
  CHECK_ERROR(nn::rms_norm(zeros({2, 3}, {.dtype = DType::Int64}), 1, none, none), "rms_norm", "int64");
  CHECK_ERROR(nn::partial_rms_norm(zeros({2, 3}), 1, 4, none, none), "partial_rms_norm", "k = 4");
  CHECK_ERROR(nn::partial_rms_norm(zeros({2, 3}), 1, 0, none, none), "partial_rms_norm", "at least 1");
  CHECK_ERROR(nn::rms_norm(zeros({2, 3}), 1, none, none, {.per_channel = true}), "rms_norm", "[N, C, H, W]");
  CHECK_ERROR(nn::l2_norm(zeros({2, 3}), 3, none, none), "l2_norm", "last 3 dims");
  CHECK_ERROR(nn::rms_norm(zeros({2, 3}), 1, none, none, {.eps = -1}), "rms_norm", "eps");
}

TEST_CASE("norm modules: parameters, defaults and shape checks") {
  nn::LayerNorm layer_norm({8});
  CHECK(layer_norm.named_parameters().size() == 2);
  CHECK(layer_norm.gain.to_vector<float>() == std::vector<float>(8, 1.0f));
  CHECK(layer_norm.bias.to_vector<float>() == std::vector<float>(8, 0.0f));
  nn::RMSNorm rms_norm({8});
  CHECK(rms_norm.named_parameters().size() == 1);  // the paper's code: gain, no bias
  CHECK_FALSE(rms_norm.bias.defined());
  CHECK(rms_norm.type_name() == "RMSNorm");
  nn::RMSNorm partial({8}, {.partial = 0.25});
  CHECK(partial.type_name() == "pRMSNorm");
  nn::L2Norm l2({8}, {.bias = true});
  CHECK(l2.named_parameters().size() == 2);

  Generator generator(8);
  const Tensor x = randn({3, 8}, generator);
  CHECK(all_close(layer_norm.forward(x), nn::layer_norm_composed(x, 1, none, none, 1e-5), 1e-5, 1e-5));
  CHECK(all_close(rms_norm.forward(x), nn::rms_norm_composed(x, 1, none, none, 1e-5), 1e-5, 1e-5));
  CHECK(all_close(partial.forward(x), nn::partial_rms_norm_composed(x, 1, 2, none, none, 1e-5), 1e-5, 1e-5));
  CHECK(all_close(l2.forward(x), nn::l2_norm_composed(x, 1, none, none, 1e-5), 1e-5, 1e-5));

  nn::RMSNorm spatial({3}, {.per_channel = true});
  CHECK(spatial.forward(randn({2, 3, 4, 4}, generator)).shape() == Shape{2, 3, 4, 4});
  CHECK_ERROR(layer_norm.forward(zeros({3, 7})), "LayerNorm", "ending in [8]", "[3, 7]");
  CHECK_ERROR(spatial.forward(zeros({2, 4, 4, 4})), "RMSNorm", "[N, 3, H, W]");
  CHECK_ERROR(nn::RMSNorm({8}, {.partial = 0}), "RMSNorm", "(0, 1]");
  CHECK_ERROR(nn::LayerNorm({}), "LayerNorm", "non-empty");
}
