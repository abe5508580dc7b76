// The composed normalisers (nn/norms/composed.h): values worked out by hand, the options of
// each, and float64 gradient checks through every option.

#include <cmath>

#include "helpers.h"

using namespace normgrad;
using testing::all_close;
using testing::leaf;
using Inputs = std::vector<Tensor>;

namespace {
const Tensor none;
}

TEST_CASE("composed normalisers on one row worked out by hand") {
  const Tensor x = tensor({{1, 2, 3, 6}}, {.dtype = DType::Float64});
  // mean 3, population variance (4 + 1 + 0 + 9) / 4 = 3.5; mean square (1+4+9+36)/4 = 12.5
  const double sd = std::sqrt(3.5), rms = std::sqrt(12.5), norm = std::sqrt(50.0);
  CHECK(all_close(nn::layer_norm_composed(x, 1, none, none, 0), {-2 / sd, -1 / sd, 0, 3 / sd}));
  CHECK(all_close(nn::rms_norm_composed(x, 1, none, none, 0), {1 / rms, 2 / rms, 3 / rms, 6 / rms}));
  CHECK(all_close(nn::rms_norm_composed(x, 1, none, none, 0.5, nn::EpsPlacement::OutsideSqrt),
                  {1 / (rms + 0.5), 2 / (rms + 0.5), 3 / (rms + 0.5), 6 / (rms + 0.5)}));
  CHECK(all_close(nn::rms_norm_composed(x, 1, none, none, 0.5),
                  {1 / std::sqrt(13.0), 2 / std::sqrt(13.0), 3 / std::sqrt(13.0), 6 / std::sqrt(13.0)}));
  // pRMSNorm with k = 2: the statistic is sqrt((1 + 4) / 2), every value is divided by it.
  const double partial = std::sqrt(2.5);
  CHECK(all_close(nn::partial_rms_norm_composed(x, 1, 2, none, none, 0),
                  {1 / partial, 2 / partial, 3 / partial, 6 / partial}));
  CHECK(all_close(nn::l2_norm_composed(x, 1, none, none, 0), {1 / norm, 2 / norm, 3 / norm, 6 / norm}));
  const Tensor gain = tensor({1, 2, 3, 4}, {.dtype = DType::Float64});
  const Tensor bias = tensor({0, 0, 0, 1}, {.dtype = DType::Float64});
  CHECK(all_close(nn::rms_norm_composed(x, 1, gain, bias, 0),
                  {1 / rms, 4 / rms, 9 / rms, 24 / rms + 1}));
}

TEST_CASE("normalising the last two dims treats them as one group") {
  const Tensor x = leaf({2, 3, 4});
  CHECK(all_close(nn::layer_norm_composed(x, 2, none, none, 1e-5),
                  nn::layer_norm_composed(x.reshape({2, 12}), 1, none, none, 1e-5).reshape({2, 3, 4})));
  CHECK(all_close(nn::rms_norm_composed(x, 2, none, none, 1e-5),
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
  constexpr auto outside = nn::EpsPlacement::OutsideSqrt;  // a constant: lambdas use it uncaptured
  CHECK_GRADIENTS([](const Inputs& in) { return nn::layer_norm_composed(in[0], 1, in[1], in[2], 1e-5); }, {x, gain, bias});
  CHECK_GRADIENTS([](const Inputs& in) { return nn::layer_norm_composed(in[0], 1, none, none, 1e-5); }, {x});
  CHECK_GRADIENTS([](const Inputs& in) { return nn::rms_norm_composed(in[0], 1, in[1], in[2], 1e-5); }, {x, gain, bias});
  CHECK_GRADIENTS([](const Inputs& in) { return nn::rms_norm_composed(in[0], 1, in[1], none, 1e-8); }, {x, gain});
  CHECK_GRADIENTS([](const Inputs& in) { return nn::rms_norm_composed(in[0], 1, in[1], none, 1e-3, outside); }, {x, gain});
  // pRMSNorm with k < n: the values on both sides of k get different gradients.
  CHECK_GRADIENTS([](const Inputs& in) { return nn::partial_rms_norm_composed(in[0], 1, 3, in[1], in[2], 1e-5); }, {x, gain, bias});
  CHECK_GRADIENTS([](const Inputs& in) { return nn::partial_rms_norm_composed(in[0], 1, 1, in[1], none, 1e-3, outside); }, {x, gain});
  CHECK_GRADIENTS([](const Inputs& in) { return nn::l2_norm_composed(in[0], 1, in[1], in[2], 1e-5); }, {x, gain, bias});
  // The spatial form: per sample and channel over H x W, per-channel gain and bias.
  const Tensor maps = leaf({2, 3, 2, 2}, 4), channel_gain = leaf({3, 1, 1}, 5);
  CHECK_GRADIENTS([](const Inputs& in) { return nn::rms_norm_composed(in[0], 2, in[1], none, 1e-6); }, {maps, channel_gain});
  CHECK_GRADIENTS([](const Inputs& in) { return nn::layer_norm_composed(in[0], 2, in[1], none, 1e-6); }, {maps, channel_gain});
}

TEST_CASE("pRMSNorm's statistic ignores the values after the first k") {
  Tensor x = tensor({{1, 2, 100, -50}}, {.dtype = DType::Float64});
  Tensor y = tensor({{1, 2, 7, 9}}, {.dtype = DType::Float64});
  const Tensor ratio_x = nn::partial_rms_norm_composed(x, 1, 2, none, none, 0) / x;
  const Tensor ratio_y = nn::partial_rms_norm_composed(y, 1, 2, none, none, 0) / y;
  CHECK(all_close(ratio_x, ratio_y.to_vector<double>()));
}

TEST_CASE("composed normalisers refuse bad arguments") {
  CHECK_ERROR(nn::rms_norm_composed(zeros({2, 3}, {.dtype = DType::Int64}), 1, none, none, 1e-5), "rms_norm", "int64");
  CHECK_ERROR(nn::layer_norm_composed(zeros({2, 3}), 3, none, none, 1e-5), "layer_norm", "last 3 dims", "[2, 3]");
  CHECK_ERROR(nn::partial_rms_norm_composed(zeros({2, 3}), 1, 4, none, none, 1e-5), "partial_rms_norm", "k = 4");
  CHECK_ERROR(nn::l2_norm_composed(zeros({2, 3}), 0, none, none, 1e-5), "l2_norm", "last 0 dims");
}
