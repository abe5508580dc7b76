// The norm family (LayerNorm, RMSNorm, pRMSNorm, L2Norm) on each floor, each section below:
//   - the composed twins (nn/norms/composed.h): values worked out by hand, the options of each,
//     and float64 gradient checks through every option;
//   - the differentiable ops (autograd/functions/norm.h) against their composed twins, through
//     autograd, and against finite differences;
//   - the CPU kernels (backends/cpu/norm.cpp), called directly through the backend, against the
//     composed twins: forward values, and for backward the gradients that autograd takes of
//     sum(composed(x) * dy) with respect to x, gain and bias. Every normaliser (LayerNorm,
//     RMSNorm with eps inside and outside the sqrt, pRMSNorm with k rounded both ways, L2Norm,
//     the per-channel spatial form) over row lengths from 1 to 4097, in float32 and float64;
//     rows of zeros; rows with a large mean and a small spread; dgain/dbias identical for 1 and
//     2 threads; rows strided within wider rows; int64 and other layouts refused. bfloat16 rows
//     give, bit for bit, the float32 kernel's results on the same values, rounded once;
//   - on a GPU, the CUDA kernels against the CPU's, forward and backward (dx, dgain, dbias):
//     every normaliser in the feature layout (rows from 1 to 8192 values, contiguous,
//     transposed or slices of wider rows, with and without gain and bias) and in the spatial
//     layout (per-channel gain and bias over [N, C, H, W]), and the norm modules moved with
//     Module::to.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "backends/dispatch.h"
#include "core/tensor_internal.h"
#include "cuda_parity.h"
#include "helpers.h"
#include "module_gradcheck.h"

using namespace normgrad;
using testing::all_close;
using testing::leaf;
using Inputs = std::vector<Tensor>;

namespace {
const Tensor none;
}  // namespace

// ---- the composed twins ----------------------------------------------------------------------

TEST_CASE("composed normalisers on one row worked out by hand") {
  const Tensor x = tensor({{1, 2, 3, 6}}, {.dtype = DType::Float64});
  // mean 3, population variance (4 + 1 + 0 + 9) / 4 = 3.5; mean square (1+4+9+36)/4 = 12.5
  const double sd = std::sqrt(3.5), rms = std::sqrt(12.5), norm = std::sqrt(50.0);
  CHECK(all_close(nn::layer_norm_composed(x, 1, none, none, 0), {-2 / sd, -1 / sd, 0, 3 / sd}));
  CHECK(
      all_close(nn::rms_norm_composed(x, 1, none, none, 0), {1 / rms, 2 / rms, 3 / rms, 6 / rms}));
  CHECK(all_close(nn::rms_norm_composed(x, 1, none, none, 0.5, EpsPlacement::OutsideSqrt),
                  {1 / (rms + 0.5), 2 / (rms + 0.5), 3 / (rms + 0.5), 6 / (rms + 0.5)}));
  CHECK(all_close(
      nn::rms_norm_composed(x, 1, none, none, 0.5),
      {1 / std::sqrt(13.0), 2 / std::sqrt(13.0), 3 / std::sqrt(13.0), 6 / std::sqrt(13.0)}));
  // pRMSNorm with k = 2: the statistic is sqrt((1 + 4) / 2), every value is divided by it.
  const double partial = std::sqrt(2.5);
  CHECK(all_close(nn::partial_rms_norm_composed(x, 1, 2, none, none, 0),
                  {1 / partial, 2 / partial, 3 / partial, 6 / partial}));
  CHECK(all_close(nn::l2_norm_composed(x, 1, none, none, 0),
                  {1 / norm, 2 / norm, 3 / norm, 6 / norm}));
  const Tensor gain = tensor({1, 2, 3, 4}, {.dtype = DType::Float64});
  const Tensor bias = tensor({0, 0, 0, 1}, {.dtype = DType::Float64});
  CHECK(all_close(nn::rms_norm_composed(x, 1, gain, bias, 0),
                  {1 / rms, 4 / rms, 9 / rms, 24 / rms + 1}));
}

TEST_CASE("normalising the last two dims treats them as one group") {
  const Tensor x = leaf({2, 3, 4});
  CHECK(all_close(
      nn::layer_norm_composed(x, 2, none, none, 1e-5),
      nn::layer_norm_composed(x.reshape({2, 12}), 1, none, none, 1e-5).reshape({2, 3, 4})));
  CHECK(
      all_close(nn::rms_norm_composed(x, 2, none, none, 1e-5),
                nn::rms_norm_composed(x.reshape({2, 12}), 1, none, none, 1e-5).reshape({2, 3, 4})));
}

TEST_CASE("partial_count rounds as the paper (ceil) or its code (floor)") {
  using nn::PartialRounding;
  CHECK(nn::partial_count(1024, 0.0625, PartialRounding::Ceil) == 64);
  CHECK(nn::partial_count(1024, 0.0625, PartialRounding::Floor) == 64);
  CHECK(nn::partial_count(100, 0.0625, PartialRounding::Ceil) == 7);
  CHECK(nn::partial_count(100, 0.0625, PartialRounding::Floor) == 6);
  CHECK(nn::partial_count(7, 0.0625, PartialRounding::Floor) == 1);  // never zero
  CHECK(nn::partial_count(8, 1.0, PartialRounding::Ceil) == 8);
  CHECK_ERROR(nn::partial_count(8, 0.0, PartialRounding::Ceil), "partial_count", "(0, 1]");
  CHECK_ERROR(nn::partial_count(0, 0.5, PartialRounding::Ceil), "partial_count", "positive");
}

TEST_CASE("gradcheck: composed normalisers through every option") {
  const Tensor x = leaf({3, 8}, 1, 2.0), gain = leaf({8}, 2), bias = leaf({8}, 3);
  constexpr auto outside = EpsPlacement::OutsideSqrt;  // a constant: lambdas use it uncaptured
  CHECK_GRADIENTS(
      [](const Inputs& in) { return nn::layer_norm_composed(in[0], 1, in[1], in[2], 1e-5); },
      {x, gain, bias});
  CHECK_GRADIENTS(
      [](const Inputs& in) { return nn::layer_norm_composed(in[0], 1, none, none, 1e-5); }, {x});
  CHECK_GRADIENTS(
      [](const Inputs& in) { return nn::rms_norm_composed(in[0], 1, in[1], in[2], 1e-5); },
      {x, gain, bias});
  CHECK_GRADIENTS(
      [](const Inputs& in) { return nn::rms_norm_composed(in[0], 1, in[1], none, 1e-8); },
      {x, gain});
  CHECK_GRADIENTS(
      [](const Inputs& in) { return nn::rms_norm_composed(in[0], 1, in[1], none, 1e-3, outside); },
      {x, gain});
  // pRMSNorm with k < n: the values on both sides of k get different gradients.
  CHECK_GRADIENTS(
      [](const Inputs& in) {
        return nn::partial_rms_norm_composed(in[0], 1, 3, in[1], in[2], 1e-5);
      },
      {x, gain, bias});
  CHECK_GRADIENTS(
      [](const Inputs& in) {
        return nn::partial_rms_norm_composed(in[0], 1, 1, in[1], none, 1e-3, outside);
      },
      {x, gain});
  CHECK_GRADIENTS(
      [](const Inputs& in) { return nn::l2_norm_composed(in[0], 1, in[1], in[2], 1e-5); },
      {x, gain, bias});
  // The spatial form: per sample and channel over H x W, per-channel gain and bias.
  const Tensor maps = leaf({2, 3, 2, 2}, 4), channel_gain = leaf({3, 1, 1}, 5);
  CHECK_GRADIENTS(
      [](const Inputs& in) { return nn::rms_norm_composed(in[0], 2, in[1], none, 1e-6); },
      {maps, channel_gain});
  CHECK_GRADIENTS(
      [](const Inputs& in) { return nn::layer_norm_composed(in[0], 2, in[1], none, 1e-6); },
      {maps, channel_gain});
}

TEST_CASE("pRMSNorm's statistic ignores the values after the first k") {
  Tensor x = tensor({{1, 2, 100, -50}}, {.dtype = DType::Float64});
  Tensor y = tensor({{1, 2, 7, 9}}, {.dtype = DType::Float64});
  const Tensor ratio_x = nn::partial_rms_norm_composed(x, 1, 2, none, none, 0) / x;
  const Tensor ratio_y = nn::partial_rms_norm_composed(y, 1, 2, none, none, 0) / y;
  CHECK(all_close(ratio_x, ratio_y.to_vector<double>()));
}

TEST_CASE("composed normalisers refuse bad arguments") {
  CHECK_ERROR(nn::rms_norm_composed(zeros({2, 3}, {.dtype = DType::Int64}), 1, none, none, 1e-5),
              "rms_norm", "int64");
  CHECK_ERROR(nn::layer_norm_composed(zeros({2, 3}), 3, none, none, 1e-5), "layer_norm",
              "last 3 dims", "[2, 3]");
  CHECK_ERROR(nn::partial_rms_norm_composed(zeros({2, 3}), 1, 4, none, none, 1e-5),
              "partial_rms_norm", "k = 4");
  CHECK_ERROR(nn::l2_norm_composed(zeros({2, 3}), 0, none, none, 1e-5), "l2_norm", "last 0 dims");
}

// ---- the differentiable ops -------------------------------------------------------------------

namespace {

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
  const auto outside = NormOptions{.eps = 1e-3, .placement = EpsPlacement::OutsideSqrt};
  for (DType dtype : {DType::Float32, DType::Float64}) {
    const double rtol = dtype == DType::Float32 ? 2e-5 : 1e-11;
    for (std::int64_t n : {1, 7, 33, 1000}) {
      CAPTURE(n);
      const Shape shape{5, n};
      const Shape affine{n};
      check_against_twin(
          [](auto& x, auto& g, auto& b) { return layer_norm(x, 1, g, b); },
          [](auto& x, auto& g, auto& b) { return nn::layer_norm_composed(x, 1, g, b, 1e-5); },
          shape, affine, dtype, rtol);
      check_against_twin(
          [](auto& x, auto& g, auto& b) { return rms_norm(x, 1, g, b); },
          [](auto& x, auto& g, auto& b) { return nn::rms_norm_composed(x, 1, g, b, 1e-5); }, shape,
          affine, dtype, rtol);
      check_against_twin(
          [outside](auto& x, auto& g, auto& b) { return rms_norm(x, 1, g, b, outside); },
          [](auto& x, auto& g, auto& b) {
            return nn::rms_norm_composed(x, 1, g, b, 1e-3, EpsPlacement::OutsideSqrt);
          },
          shape, affine, dtype, rtol);
      const std::int64_t k = nn::partial_count(n, 0.0625, nn::PartialRounding::Ceil);
      check_against_twin([k](auto& x, auto& g, auto& b) { return partial_rms_norm(x, 1, k, g, b); },
                         [k](auto& x, auto& g, auto& b) {
                           return nn::partial_rms_norm_composed(x, 1, k, g, b, 1e-5);
                         },
                         shape, affine, dtype, rtol);
      check_against_twin(
          [](auto& x, auto& g, auto& b) { return l2_norm(x, 1, g, b); },
          [](auto& x, auto& g, auto& b) { return nn::l2_norm_composed(x, 1, g, b, 1e-5); }, shape,
          affine, dtype, rtol);
    }
    // The spatial form: [N, C, H, W], per-channel gain and bias.
    const NormOptions spatial{.eps = 1e-6, .per_channel = true};
    check_against_twin(
        [spatial](auto& x, auto& g, auto& b) { return rms_norm(x, 2, g, b, spatial); },
        [](auto& x, auto& g, auto& b) {
          return nn::rms_norm_composed(x, 2, g.view({-1, 1, 1}), b.view({-1, 1, 1}), 1e-6);
        },
        {2, 3, 4, 5}, {3}, dtype, rtol);
    check_against_twin(
        [spatial](auto& x, auto& g, auto& b) { return layer_norm(x, 2, g, b, spatial); },
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
      check_against_twin([](auto& x, auto& g, auto& b) { return layer_norm(x.t(), 1, g, b).t(); },
                         [](auto& x, auto& g, auto& b) {
                           return nn::layer_norm_composed(x.t(), 1, g, b, 1e-5).t();
                         },
                         {n, 6}, {n}, dtype, rtol);
      check_against_twin(
          [](auto& x, auto& g, auto& b) { return rms_norm(x.t(), 1, g, b).t(); },
          [](auto& x, auto& g, auto& b) { return nn::rms_norm_composed(x.t(), 1, g, b, 1e-5).t(); },
          {n, 6}, {n}, dtype, rtol);
      check_against_twin(
          [k](auto& x, auto& g, auto& b) { return partial_rms_norm(x.t(), 1, k, g, b).t(); },
          [k](auto& x, auto& g, auto& b) {
            return nn::partial_rms_norm_composed(x.t(), 1, k, g, b, 1e-5).t();
          },
          {n, 6}, {n}, dtype, rtol);
      check_against_twin(
          [](auto& x, auto& g, auto& b) { return l2_norm(x.t(), 1, g, b).t(); },
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
      check_against_twin(
          [=](auto& x, auto& g, auto& b) { return within(x, layer_norm(slice(x), 1, g, b)); },
          [=](auto& x, auto& g, auto& b) {
            return within(x, nn::layer_norm_composed(slice(x), 1, g, b, 1e-5));
          },
          {5, n + 7}, {n}, dtype, rtol);
      check_against_twin(
          [=](auto& x, auto& g, auto& b) { return within(x, rms_norm(slice(x), 1, g, b)); },
          [=](auto& x, auto& g, auto& b) {
            return within(x, nn::rms_norm_composed(slice(x), 1, g, b, 1e-5));
          },
          {5, n + 7}, {n}, dtype, rtol);
      check_against_twin([=](auto& x, auto& g,
                             auto& b) { return within(x, partial_rms_norm(slice(x), 1, k, g, b)); },
                         [=](auto& x, auto& g, auto& b) {
                           return within(x,
                                         nn::partial_rms_norm_composed(slice(x), 1, k, g, b, 1e-5));
                         },
                         {5, n + 7}, {n}, dtype, rtol);
    }
  }
}

TEST_CASE("gradcheck: fused normalisers, with and without gain and bias") {
  const Tensor x = leaf({4, 9}, 1, 2.0), g = leaf({9}, 2), b = leaf({9}, 3);
  CHECK_GRADIENTS([](const Inputs& in) { return layer_norm(in[0], 1, in[1], in[2]); }, {x, g, b});
  CHECK_GRADIENTS([](const Inputs& in) { return rms_norm(in[0], 1, in[1], none); }, {x, g});
  CHECK_GRADIENTS([](const Inputs& in) { return rms_norm(in[0], 1, none, in[1]); }, {x, b});
  CHECK_GRADIENTS([](const Inputs& in) {
    return rms_norm(in[0], 1, in[1], none, {.eps = 1e-3, .placement = EpsPlacement::OutsideSqrt});
  }, {x, g});
  CHECK_GRADIENTS([](const Inputs& in) { return partial_rms_norm(in[0], 1, 3, in[1], in[2]); },
                  {x, g, b});
  CHECK_GRADIENTS([](const Inputs& in) { return l2_norm(in[0], 1, in[1], none); }, {x, g});
  CHECK_GRADIENTS(
      [](const Inputs& in) { return rms_norm(in[0], 2, in[1], in[2], {.per_channel = true}); },
      {leaf({2, 3, 2, 2}, 4), leaf({3}, 5), leaf({3}, 6)});
  // Non-contiguous input.
  CHECK_GRADIENTS([](const Inputs& in) { return layer_norm(in[0].t(), 1, none, none); },
                  {leaf({9, 4}, 7)});
}

TEST_CASE("rows of zeros stay finite, and the fused LayerNorm is precise for large means") {
  const Tensor zero_rows = zeros({3, 16}).requires_grad_();
  const Tensor y = rms_norm(zero_rows, 1, none, none);
  CHECK(y.abs().sum().item() == 0);
  y.sum().backward();
  CHECK(std::isfinite(zero_rows.grad().abs().sum().item()));
  CHECK(std::isfinite(layer_norm(zeros({3, 16}), 1, none, none).abs().sum().item()));

  // The reference sees the same float32 values, in float64: what is measured is the kernel's
  // own arithmetic, which must not cancel catastrophically (no E[x^2] - E[x]^2).
  Generator generator(3);
  for (double offset : {1e4, 1e5, 1e6}) {
    CAPTURE(offset);
    const Tensor big =
        (randn({8, 1024}, generator, {.dtype = DType::Float64}) * 1e-2 + offset).to(DType::Float32);
    const Tensor exact = nn::layer_norm_composed(big.to(DType::Float64), 1, none, none, 1e-5);
    CHECK(all_close(layer_norm(big, 1, none, none).to(DType::Float64), exact, 1e-5, 1e-5));
  }
}

TEST_CASE("fused normalisers refuse bad arguments") {
  CHECK_ERROR(rms_norm(zeros({2, 3}), 1, zeros({4}), none), "rms_norm", "gain", "[3]", "[4]");
  CHECK_ERROR(layer_norm(zeros({2, 3}), 1, none, zeros({3}, {.dtype = DType::Float64})),
              "layer_norm", "float64");
  CHECK_ERROR(rms_norm(zeros({2, 3}, {.dtype = DType::Int64}), 1, none, none), "rms_norm", "int64");
  CHECK_ERROR(partial_rms_norm(zeros({2, 3}), 1, 4, none, none), "partial_rms_norm", "k = 4");
  CHECK_ERROR(partial_rms_norm(zeros({2, 3}), 1, 0, none, none), "partial_rms_norm", "at least 1");
  CHECK_ERROR(rms_norm(zeros({2, 3}), 1, none, none, {.per_channel = true}), "rms_norm",
              "[N, C, H, W]");
  CHECK_ERROR(l2_norm(zeros({2, 3}), 3, none, none), "l2_norm", "last 3 dims");
  CHECK_ERROR(rms_norm(zeros({2, 3}), 1, none, none, {.eps = -1}), "rms_norm", "eps");
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
  CHECK(all_close(layer_norm.forward(x), nn::layer_norm_composed(x, 1, none, none, 1e-5), 1e-5,
                  1e-5));
  CHECK(all_close(rms_norm.forward(x), nn::rms_norm_composed(x, 1, none, none, 1e-5), 1e-5, 1e-5));
  CHECK(all_close(partial.forward(x), nn::partial_rms_norm_composed(x, 1, 2, none, none, 1e-5),
                  1e-5, 1e-5));
  CHECK(all_close(l2.forward(x), nn::l2_norm_composed(x, 1, none, none, 1e-5), 1e-5, 1e-5));

  nn::RMSNorm spatial({3}, {.per_channel = true});
  CHECK(spatial.forward(randn({2, 3, 4, 4}, generator)).shape() == Shape{2, 3, 4, 4});
  CHECK_ERROR(layer_norm.forward(zeros({3, 7})), "LayerNorm", "ending in [8]", "[3, 7]");
  CHECK_ERROR(spatial.forward(zeros({2, 4, 4, 4})), "RMSNorm", "[N, 3, H, W]");
  CHECK_ERROR(nn::RMSNorm({8}, {.partial = 0}), "RMSNorm", "(0, 1]");
  CHECK_ERROR(nn::LayerNorm({}), "LayerNorm", "non-empty");
}

// ---- the CPU kernels ---------------------------------------------------------------------------

namespace {

enum class Kind { Layer, Rms, PartialCeil, PartialFloor, L2 };

const char* name_of(Kind kind) {
  switch (kind) {
    case Kind::Layer:
      return "layer_norm";
    case Kind::Rms:
      return "rms_norm";
    case Kind::PartialCeil:
      return "partial_rms_norm (ceil)";
    case Kind::PartialFloor:
      return "partial_rms_norm (floor)";
    case Kind::L2:
      return "l2_norm";
  }
  return "";
}

constexpr double partial_fraction = 0.0625;

std::int64_t partial_k(Kind kind, std::int64_t n) {
  if (kind == Kind::PartialCeil)
    return nn::partial_count(n, partial_fraction, nn::PartialRounding::Ceil);
  if (kind == Kind::PartialFloor)
    return nn::partial_count(n, partial_fraction, nn::PartialRounding::Floor);
  return n;
}

backend::NormParams params_for(Kind kind, std::int64_t n, double eps, bool eps_inside,
                               std::int64_t channels = 0) {
  backend::NormParams params;
  params.centred = kind == Kind::Layer;
  params.k = partial_k(kind, n);
  params.divisor = kind == Kind::L2 ? 1.0 : static_cast<double>(params.k);
  params.eps = eps;
  params.eps_inside_sqrt = eps_inside;
  params.channels = channels;
  return params;
}

Tensor composed(Kind kind, const Tensor& x, std::int64_t normalized_dims, const Tensor& gain,
                const Tensor& bias, double eps, bool eps_inside) {
  const auto placement = eps_inside ? EpsPlacement::InsideSqrt : EpsPlacement::OutsideSqrt;
  switch (kind) {
    case Kind::Layer:
      return nn::layer_norm_composed(x, normalized_dims, gain, bias, eps);
    case Kind::Rms:
      return nn::rms_norm_composed(x, normalized_dims, gain, bias, eps, placement);
    case Kind::PartialCeil:
    case Kind::PartialFloor: {
      std::int64_t n = 1;
      for (std::int64_t d = x.dim() - normalized_dims; d < x.dim(); ++d) n *= x.size(d);
      return nn::partial_rms_norm_composed(x, normalized_dims, partial_k(kind, n), gain, bias, eps,
                                           placement);
    }
    case Kind::L2:
      return nn::l2_norm_composed(x, normalized_dims, gain, bias, eps);
  }
  return {};
}

// Pointers to the refs of optional tensors.
struct OptionalRef {
  backend::TensorRef ref;
  const backend::TensorRef* pointer = nullptr;
  explicit OptionalRef(const Tensor& tensor) {
    if (tensor.defined()) {
      ref = detail::ref(tensor);
      pointer = &ref;
    }
  }
};

struct Forward {
  Tensor y, mean, rstd;
};

// x: [rows, n] (any contiguous shape whose last dim is n when rows are rows of it).
Forward fused_forward(const backend::NormParams& params, const Tensor& x, const Tensor& gain,
                      const Tensor& bias) {
  const std::int64_t n = x.size(-1);
  const std::int64_t rows = x.numel() / n;
  const DType statistics = compute_dtype(x.dtype());
  Forward out{empty(x.shape(), {.dtype = x.dtype()}), empty({rows}, {.dtype = statistics}),
              empty({rows}, {.dtype = statistics})};
  const OptionalRef gain_ref(gain), bias_ref(bias);
  backend::cpu_backend().norm_forward(params, detail::ref(out.y), detail::ref(out.mean),
                                      detail::ref(out.rstd), detail::ref(x), gain_ref.pointer,
                                      bias_ref.pointer);
  return out;
}

struct Backward {
  Tensor dx, dgain, dbias;
};

Backward fused_backward(const backend::NormParams& params, const Tensor& x, const Tensor& dy,
                        const Forward& forward, const Tensor& gain, const Shape& affine_shape,
                        bool want_dgain, bool want_dbias) {
  Backward out{empty(x.shape(), {.dtype = x.dtype()}), Tensor(), Tensor()};
  // Filled with NaN: the kernel must overwrite every value.
  if (want_dgain) out.dgain = full(affine_shape, NAN, {.dtype = x.dtype()});
  if (want_dbias) out.dbias = full(affine_shape, NAN, {.dtype = x.dtype()});
  const OptionalRef gain_ref(gain), dgain_ref(out.dgain), dbias_ref(out.dbias);
  backend::cpu_backend().norm_backward(
      params, detail::ref(out.dx), dgain_ref.pointer, dbias_ref.pointer, detail::ref(dy),
      detail::ref(x), detail::ref(forward.mean), detail::ref(forward.rstd), gain_ref.pointer);
  return out;
}

// Forward then backward into outputs the caller laid out (views within wider tensors, say).
void run_into(const backend::NormParams& params, const Tensor& x, const Tensor& dy,
              const Tensor& gain, const Tensor& bias, const Forward& out, const Backward& grads) {
  const OptionalRef gain_ref(gain), bias_ref(bias), dgain_ref(grads.dgain), dbias_ref(grads.dbias);
  auto& cpu = backend::cpu_backend();
  cpu.norm_forward(params, detail::ref(out.y), detail::ref(out.mean), detail::ref(out.rstd),
                   detail::ref(x), gain_ref.pointer, bias_ref.pointer);
  cpu.norm_backward(params, detail::ref(grads.dx), dgain_ref.pointer, dbias_ref.pointer,
                    detail::ref(dy), detail::ref(x), detail::ref(out.mean), detail::ref(out.rstd),
                    gain_ref.pointer);
}

// Gradients of sum(composed(x) * dy) by autograd.
Backward composed_backward(Kind kind, const Tensor& x, const Tensor& dy, std::int64_t dims,
                           const Tensor& gain, const Tensor& bias, double eps, bool eps_inside) {
  const Tensor x_leaf = x.detach().clone().requires_grad_();
  const Tensor gain_leaf = gain.defined() ? gain.detach().clone().requires_grad_() : Tensor();
  const Tensor bias_leaf = bias.defined() ? bias.detach().clone().requires_grad_() : Tensor();
  (composed(kind, x_leaf, dims, gain_leaf, bias_leaf, eps, eps_inside) * dy).sum().backward();
  return {x_leaf.grad(), gain_leaf.defined() ? gain_leaf.grad() : Tensor(),
          bias_leaf.defined() ? bias_leaf.grad() : Tensor()};
}

// All values within rtol of the expected ones, relative to the largest expected magnitude
// (gradients have entries near 0 that come from cancelling terms).
bool close(const Tensor& actual, const Tensor& expected, double rtol) {
  const std::vector<double> a = actual.to_vector<double>(), e = expected.to_vector<double>();
  if (a.size() != e.size()) return false;
  double scale = 1.0;
  for (double value : e) scale = std::max(scale, std::fabs(value));
  for (std::size_t i = 0; i < a.size(); ++i)
    if (!(std::fabs(a[i] - e[i]) <= rtol * (std::fabs(e[i]) + scale))) return false;
  return true;
}

bool all_finite(const Tensor& tensor) {
  for (double value : tensor.to_vector<double>())
    if (!std::isfinite(value)) return false;
  return true;
}

Tensor random_tensor(const Shape& shape, DType dtype, std::uint64_t seed, double scale,
                     double shift) {
  Generator generator(seed);
  return (randn(shape, generator, {.dtype = DType::Float64}) * scale + shift).to(dtype);
}

// One configuration on [rows, n] rows, forward and backward, against the composed twin.
void check_against_composed(Kind kind, DType dtype, std::int64_t rows, std::int64_t n, bool affine,
                            bool eps_inside) {
  const double rtol = dtype == DType::Float32 ? 1e-5 : 1e-12;
  const double eps = 1e-5;
  const Tensor x = random_tensor({rows, n}, dtype, 10 + static_cast<std::uint64_t>(n), 2.0, 0.5);
  const Tensor dy = random_tensor({rows, n}, dtype, 20 + static_cast<std::uint64_t>(n), 1.0, 0.0);
  const Tensor gain = affine ? random_tensor({n}, dtype, 30, 0.5, 1.0) : Tensor();
  const Tensor bias = affine ? random_tensor({n}, dtype, 40, 1.0, 0.0) : Tensor();
  INFO(std::string(name_of(kind)) << " " << to_string(dtype) << " rows = " << rows << " n = " << n
                                  << " affine = " << affine << " eps inside = " << eps_inside);
  const auto params = params_for(kind, n, eps, eps_inside);
  const Forward forward = fused_forward(params, x, gain, bias);
  CHECK(close(forward.y, composed(kind, x, 1, gain, bias, eps, eps_inside), rtol));
  if (kind != Kind::Layer) CHECK(forward.mean.abs().max().item() == 0.0);

  const Backward fused = fused_backward(params, x, dy, forward, gain, {n}, affine, affine);
  const Backward expected = composed_backward(kind, x, dy, 1, gain, bias, eps, eps_inside);
  CHECK(close(fused.dx, expected.dx, rtol));
  if (affine) {
    CHECK(close(fused.dgain, expected.dgain, rtol));
    CHECK(close(fused.dbias, expected.dbias, rtol));
  }
}

const std::vector<std::int64_t> row_lengths = {1, 7, 33, 1000, 4097};

}  // namespace

TEST_CASE("norm kernels: LayerNorm, RMSNorm and L2Norm match the composed twins") {
  for (DType dtype : {DType::Float32, DType::Float64})
    for (std::int64_t n : row_lengths)
      for (bool affine : {false, true}) {
        check_against_composed(Kind::Layer, dtype, 5, n, affine, true);
        check_against_composed(Kind::L2, dtype, 5, n, affine, true);
        for (bool eps_inside : {true, false})
          check_against_composed(Kind::Rms, dtype, 5, n, affine, eps_inside);
      }
}

TEST_CASE("norm kernels: pRMSNorm with k rounded up and down matches the composed twin") {
  // n = 33: k = 3 (ceil) or 2 (floor); n = 1000: 63 or 62; n = 4097: 257 or 256.
  for (DType dtype : {DType::Float32, DType::Float64})
    for (std::int64_t n : row_lengths)
      for (Kind kind : {Kind::PartialCeil, Kind::PartialFloor})
        for (bool eps_inside : {true, false}) {
          check_against_composed(kind, dtype, 5, n, true, eps_inside);
          check_against_composed(kind, dtype, 5, n, false, eps_inside);
        }
}

TEST_CASE("norm kernels: many rows, split over threads, match the composed twin") {
  check_against_composed(Kind::Rms, DType::Float32, 1000, 257, true, true);
  check_against_composed(Kind::Layer, DType::Float64, 1000, 257, true, true);
}

TEST_CASE("norm kernels: the spatial form has one gain and bias per channel") {
  // x: [N, C, H, W] seen by the kernel as [N * C, H * W], row r in channel r % C; the twin
  // normalises the last two dims with gain and bias of shape [C, 1, 1].
  const std::int64_t batch = 3, channels = 4, height = 5, width = 6;
  for (DType dtype : {DType::Float32, DType::Float64})
    for (Kind kind : {Kind::Rms, Kind::Layer, Kind::PartialCeil})
      for (bool affine : {false, true}) {
        const double rtol = dtype == DType::Float32 ? 1e-5 : 1e-12;
        const double eps = 1e-6;
        INFO(std::string(name_of(kind)) << " " << to_string(dtype) << " affine = " << affine);
        const Tensor x = random_tensor({batch, channels, height, width}, dtype, 1, 1.5, 0.3);
        const Tensor dy = random_tensor({batch, channels, height, width}, dtype, 2, 1.0, 0.0);
        const Tensor gain = affine ? random_tensor({channels, 1, 1}, dtype, 3, 0.5, 1.0) : Tensor();
        const Tensor bias = affine ? random_tensor({channels, 1, 1}, dtype, 4, 1.0, 0.0) : Tensor();
        const auto params = params_for(kind, height * width, eps, true, channels);
        const Tensor rows = x.reshape({batch * channels, height * width});
        const Forward forward = fused_forward(params, rows, gain, bias);
        CHECK(
            close(forward.y.reshape(x.shape()), composed(kind, x, 2, gain, bias, eps, true), rtol));
        // dbias is wanted even without a gain: the kernel sums dy per channel all the same.
        const Backward fused = fused_backward(params, rows, dy.reshape(rows.shape()), forward, gain,
                                              {channels}, affine, true);
        const Backward expected = composed_backward(kind, x, dy, 2, gain, bias, eps, true);
        CHECK(close(fused.dx.reshape(x.shape()), expected.dx, rtol));
        CHECK(close(fused.dbias, dy.sum({0, 2, 3}), rtol));
        if (affine) {
          CHECK(close(fused.dgain, expected.dgain.reshape({channels}), rtol));
          CHECK(close(fused.dbias, expected.dbias.reshape({channels}), rtol));
        }
      }
}

TEST_CASE("norm kernels: rows of zeros give finite outputs and gradients") {
  for (DType dtype : {DType::Float32, DType::Float64})
    for (Kind kind : {Kind::Layer, Kind::Rms, Kind::PartialFloor, Kind::L2})
      for (bool eps_inside : {true, false}) {
        if (kind == Kind::Layer && !eps_inside) continue;
        INFO(std::string(name_of(kind))
             << " " << to_string(dtype) << " eps inside = " << eps_inside);
        const std::int64_t n = 33;
        const Tensor x = zeros({4, n}, {.dtype = dtype});
        const Tensor dy = random_tensor({4, n}, dtype, 5, 1.0, 0.0);
        const Tensor gain = random_tensor({n}, dtype, 6, 0.5, 1.0);
        const Tensor bias = random_tensor({n}, dtype, 7, 1.0, 0.0);
        const auto params = params_for(kind, n, 1e-5, eps_inside);
        const Forward forward = fused_forward(params, x, gain, bias);
        CHECK(all_finite(forward.y));
        CHECK(all_finite(forward.rstd));
        CHECK(close(forward.y, bias.expand({4, n}), 1e-12));  // the normalised part is 0
        const Backward backward = fused_backward(params, x, dy, forward, gain, {n}, true, true);
        CHECK(all_finite(backward.dx));
        CHECK(all_finite(backward.dgain));
        CHECK(all_finite(backward.dbias));
        if (eps_inside) {
          // At a = 0 the correction term vanishes: dx = g dy / sqrt(eps) (LayerNorm also
          // subtracts the mean of g dy).
          const Backward expected = composed_backward(kind, x, dy, 1, gain, bias, 1e-5, true);
          CHECK(close(backward.dx, expected.dx, dtype == DType::Float32 ? 1e-5 : 1e-12));
        } else {
          // Eps outside the sqrt: the correction is defined as 0 where sqrt(q) = 0.
          CHECK(close(backward.dx, gain * dy / 1e-5, dtype == DType::Float32 ? 1e-5 : 1e-12));
        }
      }
}

TEST_CASE("norm kernels: LayerNorm keeps its precision for a large mean and a small spread") {
  // float32 rows with a mean of 1e4 to 1e6 and a standard deviation of 1e-2 (at 1e6 a float32
  // step is 0.0625, so the rows hold a few distinct values), against the same float32 values
  // normalised in float64. E[a^2] - E[a]^2, or a float32 mean, would lose every digit here.
  const std::int64_t rows = 6, n = 1000;
  std::vector<double> means = {1e4, -3e4, 1e5, 3e5, -1e6, 1e6};
  Generator generator(11);
  const Tensor noise = randn({rows, n}, generator, {.dtype = DType::Float64}) * 1e-2;
  const Tensor x = (noise + from_vector(means, {rows, 1})).to(DType::Float32);
  const Tensor gain = random_tensor({n}, DType::Float32, 12, 0.5, 1.0);
  const Tensor bias = random_tensor({n}, DType::Float32, 13, 1.0, 0.0);
  const double eps = 1e-8;
  const auto params = params_for(Kind::Layer, n, eps, true);
  const Forward forward = fused_forward(params, x, gain, bias);

  // The float64 reference, written out.
  const std::vector<double> values = x.to_vector<double>();
  const std::vector<double> g = gain.to_vector<double>(), b = bias.to_vector<double>();
  std::vector<double> expected(values.size()), expected_rstd(rows);
  for (std::int64_t row = 0; row < rows; ++row) {
    const double* a = values.data() + row * n;
    double sum = 0, squares = 0;
    for (std::int64_t i = 0; i < n; ++i) sum += a[i];
    const double mu = sum / n;
    for (std::int64_t i = 0; i < n; ++i) squares += (a[i] - mu) * (a[i] - mu);
    expected_rstd[row] = 1.0 / std::sqrt(squares / n + eps);
    for (std::int64_t i = 0; i < n; ++i)
      expected[row * n + i] = g[i] * (a[i] - mu) * expected_rstd[row] + b[i];
  }
  const std::vector<double> y = forward.y.to_vector<double>();
  double worst = 0;
  for (std::size_t i = 0; i < y.size(); ++i)
    worst = std::max(worst, std::fabs(y[i] - expected[i]) / std::max(1.0, std::fabs(expected[i])));
  INFO("worst relative error " << worst);
  CHECK(worst < 1e-5);
  CHECK(testing::all_close(forward.rstd, expected_rstd, 1e-5, 0));

  // Backward recovers the part of the mean that float32 cannot hold: dx agrees with the same
  // computation in float64.
  const Tensor dy = random_tensor({rows, n}, DType::Float32, 14, 1.0, 0.0);
  const Backward fused = fused_backward(params, x, dy, forward, gain, {n}, true, true);
  const Tensor x64 = x.to(DType::Float64), gain64 = gain.to(DType::Float64);
  const Forward forward64 = fused_forward(params, x64, gain64, bias.to(DType::Float64));
  const Backward fused64 =
      fused_backward(params, x64, dy.to(DType::Float64), forward64, gain64, {n}, true, true);
  CHECK(close(fused.dx, fused64.dx, 1e-5));
  CHECK(close(fused.dgain, fused64.dgain, 1e-5));
}

TEST_CASE("norm kernels: dgain and dbias are identical for 1 and 2 threads") {
  const int threads = get_num_threads();
  for (Kind kind : {Kind::Rms, Kind::Layer})
    for (std::int64_t channels : {std::int64_t{0}, std::int64_t{8}}) {
      INFO(std::string(name_of(kind)) << " channels = " << channels);
      const std::int64_t rows = 1000, n = 257;
      const std::int64_t width = channels > 0 ? channels : n;
      const Tensor x = random_tensor({rows, n}, DType::Float32, 21, 1.0, 0.2);
      const Tensor dy = random_tensor({rows, n}, DType::Float32, 22, 1.0, 0.0);
      const Tensor gain = random_tensor({width}, DType::Float32, 23, 0.5, 1.0);
      const Tensor bias = random_tensor({width}, DType::Float32, 24, 1.0, 0.0);
      const auto params = params_for(kind, n, 1e-5, true, channels);
      std::vector<std::vector<float>> results[2];
      for (int t : {1, 2}) {
        set_num_threads(t);
        const Forward forward = fused_forward(params, x, gain, bias);
        const Backward backward = fused_backward(params, x, dy, forward, gain, {width}, true, true);
        results[t - 1] = {forward.y.to_vector<float>(), backward.dx.to_vector<float>(),
                          backward.dgain.to_vector<float>(), backward.dbias.to_vector<float>()};
      }
      set_num_threads(threads);
      CHECK(results[0] == results[1]);
    }
}

TEST_CASE("norm kernels: int64 is refused, and bfloat16 rows without float32 statistics") {
  struct Refused {
    DType dtype;
    const char* message;
  };
  for (const Refused& refused : {Refused{DType::Int64, "int64"},
                                 Refused{DType::BFloat16, "mean and rstd must be float32"}}) {
    const Tensor x = zeros({2, 3}, {.dtype = refused.dtype});
    const Tensor stats = zeros({2}, {.dtype = refused.dtype});
    const auto params = params_for(Kind::Rms, 3, 1e-5, true);
    auto& cpu = backend::cpu_backend();
    CHECK_ERROR(cpu.norm_forward(params, detail::ref(x), detail::ref(stats), detail::ref(stats),
                                 detail::ref(x), nullptr, nullptr),
                "cpu norm_forward", refused.message);
    CHECK_ERROR(cpu.norm_backward(params, detail::ref(x), nullptr, nullptr, detail::ref(x),
                                  detail::ref(x), detail::ref(stats), detail::ref(stats), nullptr),
                "cpu norm_backward", refused.message);
  }
}

TEST_CASE("norm kernels: rows strided within wider rows are read and written in place") {
  // x, y, dy and dx are columns [2, 2 + n) of wider [rows, n + 5] tensors, as a recurrent
  // cell's gates are a slice of its projection. The results match the contiguous call's and
  // the columns around the slice keep their values.
  for (DType dtype : {DType::Float32, DType::Float64}) {
    const double tolerance = dtype == DType::Float32 ? 1e-6 : 1e-14;
    for (Kind kind : {Kind::Layer, Kind::Rms, Kind::PartialCeil}) {
      for (std::int64_t n : {1, 7, 300}) {
        INFO(name_of(kind) << ", n " << n << ", " << dtype);
        const std::int64_t rows = 40, width = n + 5;
        const Tensor x_wide = random_tensor({rows, width}, dtype, 31, 1.0, 0.3);
        const Tensor dy_wide = random_tensor({rows, width}, dtype, 32, 1.0, 0.0);
        const Tensor gain = random_tensor({n}, dtype, 33, 0.5, 1.0);
        const Tensor bias = random_tensor({n}, dtype, 34, 1.0, 0.0);
        const Tensor x = x_wide.narrow(1, 2, n), dy = dy_wide.narrow(1, 2, n);
        const auto params = params_for(kind, n, 1e-5, true);
        const Forward expected = fused_forward(params, x.contiguous(), gain, bias);
        const Backward expected_grads = fused_backward(params, x.contiguous(), dy.contiguous(),
                                                       expected, gain, {n}, true, true);

        const Tensor y_wide = full({rows, width}, 7.0, {.dtype = dtype});
        const Tensor dx_wide = full({rows, width}, 7.0, {.dtype = dtype});
        const Tensor y = y_wide.narrow(1, 2, n), dx = dx_wide.narrow(1, 2, n);
        const Tensor mean = empty({rows}, {.dtype = dtype}), rstd = empty({rows}, {.dtype = dtype});
        const Tensor dgain = empty({n}, {.dtype = dtype}), dbias = empty({n}, {.dtype = dtype});
        run_into(params, x, dy, gain, bias, {y, mean, rstd}, {dx, dgain, dbias});
        CHECK(testing::all_close(y, expected.y, tolerance, tolerance));
        CHECK(testing::all_close(rstd, expected.rstd, tolerance, tolerance));
        CHECK(testing::all_close(dx, expected_grads.dx, tolerance, tolerance));
        CHECK(testing::all_close(dgain, expected_grads.dgain, tolerance, tolerance));
        CHECK(testing::all_close(dbias, expected_grads.dbias, tolerance, tolerance));
        for (const Tensor& wide : {y_wide, dx_wide}) {
          const Tensor outside = cat({wide.narrow(1, 0, 2), wide.narrow(1, 2 + n, 3)}, 1);
          CHECK(testing::all_close(outside, full(outside.shape(), 7.0, {.dtype = dtype}), 0, 0));
        }
      }
    }
  }
}

TEST_CASE("norm kernels: operands whose rows are not evenly strided are refused") {
  const auto params = params_for(Kind::Rms, 4, 1e-5, true);
  auto& cpu = backend::cpu_backend();
  const Tensor y = empty({3, 4}), stats = empty({3});
  // A transposed [3, 4]: the values of a row are 3 apart.
  const Tensor transposed = random_tensor({4, 3}, DType::Float32, 35, 1.0, 0.0).t();
  CHECK_ERROR(cpu.norm_forward(params, detail::ref(y), detail::ref(stats), detail::ref(stats),
                               detail::ref(transposed), nullptr, nullptr),
              "cpu norm_forward", "x must be contiguous, or [3, 4] with adjacent values");
  // Rows 2 apart would overlap rows of 4 values.
  const Tensor storage = zeros({8});
  backend::TensorRef overlapping = detail::ref(storage);
  overlapping.shape = {3, 4};
  overlapping.strides = {2, 1};
  CHECK_ERROR(cpu.norm_backward(params, detail::ref(y), nullptr, nullptr, overlapping,
                                detail::ref(y), detail::ref(stats), detail::ref(stats), nullptr),
              "cpu norm_backward", "dy must be contiguous");
}

TEST_CASE("norm kernels: bfloat16 gives the float32 kernel's results on the same values, rounded") {
  // bfloat16 operands are widened into float32 working copies and computed by the float32
  // kernel (backends/bfloat16_widening.h), so y, dx, dgain and dbias must be its results,
  // rounded once, and the float32 mean and rstd equal to its. A norm computes each row on its
  // own, so a strided row's copy, laid out contiguously, gives what the strided row would. Rows of
  // 600 values span three of the 256-value blocks the row sums are built from; 300 rows, several
  // row blocks of dgain and dbias; the strided form reads and writes rows that lie within wider
  // ones.
  using testing::bits_mismatch;
  const auto f32 = [](const Tensor& t) { return t.defined() ? t.to(DType::Float32) : t; };
  const auto bf16 = [](const Tensor& t) { return t.to(DType::BFloat16); };
  const std::int64_t rows = 300;
  for (Kind kind : {Kind::Layer, Kind::Rms, Kind::PartialCeil, Kind::L2})
    for (std::int64_t n : {1, 7, 600})
      for (std::int64_t channels : {std::int64_t{0}, std::int64_t{6}})
        for (bool strided : {false, true})
          for (int affine = 0; affine < 3; ++affine) {  // none; gain and bias; dbias alone
            const bool eps_inside = kind != Kind::Rms || n != 7;
            INFO(std::string(name_of(kind)) << ", n " << n << ", channels " << channels
                                            << ", strided " << strided << ", affine " << affine);
            const std::int64_t width = channels > 0 ? channels : n;
            const std::int64_t wide = strided ? n + 3 : n;
            const auto rows_of = [&](const Tensor& t) { return t.narrow(1, 1, n); };
            const Tensor x_wide = bf16(random_tensor({rows, wide + 1}, DType::Float32,
                                                     50 + static_cast<std::uint64_t>(n), 2.0, 0.5));
            const Tensor dy_wide =
                bf16(random_tensor({rows, wide + 1}, DType::Float32, 51, 1.0, 0));
            const Tensor x = strided ? rows_of(x_wide) : rows_of(x_wide).contiguous();
            const Tensor dy = strided ? rows_of(dy_wide) : rows_of(dy_wide).contiguous();
            const Tensor gain =
                affine == 1 ? bf16(random_tensor({width}, DType::Float32, 52, 0.5, 1.0)) : Tensor();
            const Tensor bias =
                affine == 1 ? bf16(random_tensor({width}, DType::Float32, 53, 1.0, 0.0)) : Tensor();
            const auto params = params_for(kind, n, 1e-5, eps_inside, channels);

            const Forward expected =
                fused_forward(params, f32(x).contiguous(), f32(gain), f32(bias));
            const Backward expected_grads =
                fused_backward(params, f32(x).contiguous(), f32(dy).contiguous(), expected,
                               f32(gain), {width}, affine == 1, affine >= 1);

            // The outputs are written within wider rows too when strided.
            const Tensor y_wide = full({rows, wide + 1}, 7.0, {.dtype = DType::BFloat16});
            const Tensor dx_wide = full({rows, wide + 1}, 7.0, {.dtype = DType::BFloat16});
            const Tensor y =
                strided ? rows_of(y_wide) : empty({rows, n}, {.dtype = DType::BFloat16});
            const Tensor dx =
                strided ? rows_of(dx_wide) : empty({rows, n}, {.dtype = DType::BFloat16});
            const Tensor mean = empty({rows}), rstd = empty({rows});
            const Tensor dgain =
                affine == 1 ? full({width}, NAN, {.dtype = DType::BFloat16}) : Tensor();
            const Tensor dbias =
                affine >= 1 ? full({width}, NAN, {.dtype = DType::BFloat16}) : Tensor();
            run_into(params, x, dy, gain, bias, {y, mean, rstd}, {dx, dgain, dbias});
            CHECK_NO_MISMATCH(bits_mismatch(y.contiguous(), bf16(expected.y), "y"));
            CHECK_NO_MISMATCH(bits_mismatch(mean, expected.mean, "mean"));
            CHECK_NO_MISMATCH(bits_mismatch(rstd, expected.rstd, "rstd"));
            CHECK_NO_MISMATCH(bits_mismatch(dx.contiguous(), bf16(expected_grads.dx), "dx"));
            if (affine == 1)
              CHECK_NO_MISMATCH(bits_mismatch(dgain, bf16(expected_grads.dgain), "dgain"));
            if (affine >= 1)
              CHECK_NO_MISMATCH(bits_mismatch(dbias, bf16(expected_grads.dbias), "dbias"));
            if (strided)
              for (const Tensor& outputs : {y_wide, dx_wide}) {
                const Tensor outside =
                    cat({outputs.narrow(1, 0, 1), outputs.narrow(1, 1 + n, 3)}, 1);
                CHECK(testing::all_close(f32(outside), full(outside.shape(), 7.0), 0, 0));
              }
          }
}

// ---- on a GPU: CPU against CUDA ----------------------------------------------------------------

// The CUDA kernels against the CPU's, forward and backward (dx, dgain, dbias). Tolerances:
// testing::norm_values and testing::norm_gradients, the bounds the fused kernels meet against
// their composed twins above: the row statistics and the batch sums of dgain and dbias are
// reduced in another order on the GPU.

using testing::affine_gradients;
using testing::module_parity_mismatch;
using testing::norm_gradients;
using testing::norm_inputs;
using testing::norm_values;
using testing::normal;
using testing::parity_mismatch;

namespace {

struct NormCase {
  const char* name;
  NormFunction norm;
};

// Every fused normaliser over the last dim, for rows of n values.
std::vector<NormCase> feature_norms(std::int64_t n) {
  const std::int64_t k = nn::partial_count(n, 0.0625, nn::PartialRounding::Ceil);
  const NormOptions outside{.eps = 1e-3, .placement = EpsPlacement::OutsideSqrt};
  return {
      {"layer_norm", [](auto& x, auto& g, auto& b) { return layer_norm(x, 1, g, b); }},
      {"rms_norm", [](auto& x, auto& g, auto& b) { return rms_norm(x, 1, g, b); }},
      {"rms_norm, eps outside",
       [outside](auto& x, auto& g, auto& b) { return rms_norm(x, 1, g, b, outside); }},
      {"partial_rms_norm",
       [k](auto& x, auto& g, auto& b) { return partial_rms_norm(x, 1, k, g, b); }},
      {"l2_norm", [](auto& x, auto& g, auto& b) { return l2_norm(x, 1, g, b); }},
  };
}

}  // namespace

TEST_CASE("cuda parity: fused feature norms, values and dx, dgain, dbias") {
  SKIP_PARITY_WITHOUT_CUDA();
  for (const DType dtype : {DType::Float32, DType::Float64}) {
    // Warp per row (up to 1024 values in registers), a block per row with its values in
    // registers (2048, 8192) and streamed (4097: no 16-byte packs).
    for (const std::int64_t n : {1, 7, 33, 1000, 2048, 4097, 8192}) {
      for (const NormCase& c : feature_norms(n)) {
        INFO(c.name << ", n " << n << ", " << dtype);
        const NormFunction norm = c.norm;
        // With gain and bias.
        CHECK_NO_MISMATCH(parity_mismatch(
            [norm](const Inputs& in) { return norm(in[0], in[1], in[2]); },
            norm_inputs({5, n}, {n}, dtype), norm_values(dtype), norm_gradients(dtype)));
        // Without: the kernels' null gain and bias paths.
        CHECK_NO_MISMATCH(parity_mismatch(
            [norm](const Inputs& in) { return norm(in[0], none, none); },
            {normal({5, n}, 4, dtype, 3.0)}, norm_values(dtype), norm_gradients(dtype)));
        // Gain only, and a transposed input whose rows are strided.
        CHECK_NO_MISMATCH(
            parity_mismatch([norm](const Inputs& in) { return norm(in[0].t(), in[1], none).t(); },
                            {normal({n, 6}, 5, dtype, 3.0), normal({n}, 6, dtype)},
                            norm_values(dtype), norm_gradients(dtype)));
      }
    }
  }
}

TEST_CASE("cuda parity: fused norms over several trailing dims and many rows") {
  SKIP_PARITY_WITHOUT_CUDA();
  for (const DType dtype : {DType::Float32, DType::Float64}) {
    INFO(dtype);
    // [3, 4, 6, 10]: groups of 60 values over the last two dims, 12 rows.
    CHECK_NO_MISMATCH(parity_mismatch(
        [](const Inputs& in) { return layer_norm(in[0], 2, in[1], in[2]); },
        norm_inputs({3, 4, 6, 10}, {6, 10}, dtype), norm_values(dtype), norm_gradients(dtype)));
    CHECK_NO_MISMATCH(
        parity_mismatch([](const Inputs& in) { return rms_norm(in[0], 2, in[1], none); },
                        {normal({3, 4, 6, 10}, 7, dtype, 3.0), normal({6, 10}, 8, dtype)},
                        norm_values(dtype), norm_gradients(dtype)));
    // 4096 rows of 64: dgain and dbias add 4096 terms each.
    CHECK_NO_MISMATCH(parity_mismatch(
        [](const Inputs& in) { return layer_norm(in[0], 1, in[1], in[2]); },
        norm_inputs({4096, 64}, {64}, dtype), norm_values(dtype), affine_gradients(dtype, 4096)));
    CHECK_NO_MISMATCH(parity_mismatch(
        [](const Inputs& in) { return rms_norm(in[0], 1, in[1], in[2]); },
        norm_inputs({4096, 64}, {64}, dtype), norm_values(dtype), affine_gradients(dtype, 4096)));
  }
}

TEST_CASE("cuda parity: fused norms on slices of wider rows, read and written in place") {
  SKIP_PARITY_WITHOUT_CUDA();
  for (const DType dtype : {DType::Float32, DType::Float64}) {
    // Columns [offset, offset + n) of [5, n + 8] rows: at offset 4 a float32 slice starts on a
    // 16-byte boundary (n a multiple of 4: the packed path), at offset 1 it does not.
    for (const std::int64_t n : {7, 1000, 2048, 8192}) {
      for (const std::int64_t offset : {1, 4}) {
        for (const NormCase& c : feature_norms(n)) {
          INFO(c.name << ", n " << n << ", offset " << offset << ", " << dtype);
          const NormFunction norm = c.norm;
          CHECK_NO_MISMATCH(parity_mismatch(
              [norm, n, offset](const Inputs& in) {
                const Tensor& x = in[0];
                return cat({x.narrow(1, 0, offset), norm(x.narrow(1, offset, n), in[1], in[2]),
                            x.narrow(1, offset + n, 8 - offset)},
                           1);
              },
              norm_inputs({5, n + 8}, {n}, dtype), norm_values(dtype), norm_gradients(dtype)));
        }
      }
    }
  }
}

TEST_CASE("cuda parity: fused norms in the spatial layout, per-channel gain and bias") {
  SKIP_PARITY_WITHOUT_CUDA();
  const NormOptions spatial{.eps = 1e-6, .per_channel = true};
  for (const DType dtype : {DType::Float32, DType::Float64}) {
    for (const Shape& shape : {Shape{2, 3, 4, 5}, Shape{4, 8, 9, 7}}) {
      INFO(dtype << ", " << shape);
      const Inputs inputs = norm_inputs(shape, {shape[1]}, dtype);
      const double per_channel = static_cast<double>(shape[0] * shape[2] * shape[3]);
      const std::vector<testing::Tolerance> gradients = affine_gradients(dtype, per_channel);
      CHECK_NO_MISMATCH(parity_mismatch(
          [spatial](const Inputs& in) { return layer_norm(in[0], 2, in[1], in[2], spatial); },
          inputs, norm_values(dtype), gradients));
      CHECK_NO_MISMATCH(parity_mismatch(
          [spatial](const Inputs& in) { return rms_norm(in[0], 2, in[1], in[2], spatial); },
          inputs, norm_values(dtype), gradients));
      CHECK_NO_MISMATCH(parity_mismatch(
          [spatial](const Inputs& in) {
            return partial_rms_norm(in[0], 2, 3, in[1], none, spatial);
          },
          inputs, norm_values(dtype), gradients));
      CHECK_NO_MISMATCH(parity_mismatch(
          [spatial](const Inputs& in) { return l2_norm(in[0], 2, in[1], none, spatial); },
          inputs, norm_values(dtype), gradients));
    }
  }
}

TEST_CASE("cuda parity: norm modules from make_norm, moved with Module::to") {
  SKIP_PARITY_WITHOUT_CUDA();
  for (const char* spec : {"layernorm", "rmsnorm", "prmsnorm:0.25", "l2norm", "rmsnorm,bias=on",
                           "prmsnorm:0.125,eps=1e-8,placement=outside"}) {
    for (const nn::NormLayout layout : {nn::NormLayout::Features, nn::NormLayout::ChannelMaps}) {
      const bool maps = layout == nn::NormLayout::ChannelMaps;
      INFO(spec << (maps ? ", channel maps" : ", features"));
      const std::shared_ptr<nn::Norm> norm = nn::make_norm(spec, 16, layout);
      testing::randomise(*norm, 9);
      const Tensor x = maps ? normal({3, 16, 5, 6}, 10, DType::Float32, 2.0)
                            : normal({7, 16}, 10, DType::Float32, 2.0);
      CHECK_NO_MISMATCH(module_parity_mismatch(
          *norm, [&](const Inputs& in) { return norm->forward(in[0]); }, {x},
          norm_values(DType::Float32), norm_gradients(DType::Float32)));
    }
  }
}
