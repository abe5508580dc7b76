// WeightNorm (nn/norms/weight_norm.h): the fused reparameterisation against its composed twin
// and finite differences, its invariance to the scale of v, and data-dependent initialisation;
// on a GPU, the CUDA kernels against the CPU's, forward and backward.

#include "cuda_parity.h"
#include "helpers.h"

using namespace normgrad;
using testing::all_close;
using testing::leaf;
using Inputs = std::vector<Tensor>;

TEST_CASE("weight_norm: gradients of v and g match finite differences") {
  for (const Shape& shape : {Shape{4, 3}, Shape{3, 2, 2, 2}, Shape{5}, Shape{1, 7}}) {
    CAPTURE(shape);
    CHECK_GRADIENTS([](const Inputs& in) { return nn::weight_norm(in[0], in[1]); },
                    {leaf(shape, 1), leaf({shape[0]}, 2)});
    CHECK_GRADIENTS([](const Inputs& in) { return nn::weight_norm(in[0], in[1], 0.5); },
                    {leaf(shape, 3), leaf({shape[0]}, 4)});
  }
}

TEST_CASE("weight_norm: fused matches the composed twin, also for a non-contiguous v") {
  for (DType dtype : {DType::Float32, DType::Float64}) {
    const double rtol = dtype == DType::Float32 ? 1e-5 : 1e-12;
    Generator generator(5);
    for (const Shape& shape : {Shape{6, 33}, Shape{4, 3, 3, 3}, Shape{2, 4097}}) {
      CAPTURE(shape);
      const Tensor v0 = randn(shape, generator, {.dtype = dtype});
      const Tensor g0 = randn({shape[0]}, generator, {.dtype = dtype});
      Tensor v[2] = {v0.clone().requires_grad_(), v0.clone().requires_grad_()};
      Tensor g[2] = {g0.clone().requires_grad_(), g0.clone().requires_grad_()};
      const Tensor fused = nn::weight_norm(v[0], g[0], 1e-3);
      const Tensor composed = nn::weight_norm_composed(v[1], g[1], 1e-3);
      CHECK(all_close(fused, composed, rtol, rtol));
      const Tensor dy = randn(shape, generator, {.dtype = dtype});
      (fused * dy).sum().backward();
      (composed * dy).sum().backward();
      CHECK(all_close(v[0].grad(), v[1].grad(), rtol * 10, rtol * 10));
      CHECK(all_close(g[0].grad(), g[1].grad(), rtol * 10, rtol * 10));
    }
    // A transposed view as v: rows are then strided in memory.
    const Tensor base = randn({5, 4}, generator, {.dtype = dtype});
    const Tensor g = randn({4}, generator, {.dtype = dtype});
    CHECK(all_close(nn::weight_norm(base.t(), g), nn::weight_norm_composed(base.t(), g, 0), rtol,
                    rtol));
  }
}

TEST_CASE("WeightNorm starts at the given weight, and scaling a row of v changes nothing") {
  Generator generator(7);
  const Tensor weight = randn({4, 6}, generator, {.dtype = DType::Float64});
  nn::WeightNorm wn(weight);
  CHECK(all_close(wn.weight(), weight, 1e-12, 1e-12));
  CHECK(wn.named_parameters().size() == 2);
  CHECK(wn.gain.shape() == Shape{4});
  const Tensor before = wn.weight();
  {
    NoGradGuard no_grad;
    wn.direction.mul_(tensor({3.0, 0.5, 10.0, 1e-3}, {.dtype = DType::Float64}).unsqueeze(1));
  }
  CHECK(all_close(wn.weight(), before, 1e-12, 1e-12));
  // Each row of the weight has length |g_i|.
  CHECK(all_close(sqrt(square(wn.weight()).sum({1})), abs(wn.gain), 1e-12, 1e-12));
}

TEST_CASE("WeightNorm::init_from_data gives unit outputs zero mean and the asked spread") {
  Generator generator(11);
  const Tensor x = randn({64, 5}, generator, {.dtype = DType::Float64}) * 4.0 + 1.0;
  nn::WeightNorm wn(randn({3, 5}, generator, {.dtype = DType::Float64}) * 0.05);
  const Tensor bias = wn.init_from_data(matmul(x, wn.weight().t()), 1, 2.0);
  CHECK(bias.shape() == Shape{3});
  const Tensor outputs = matmul(x, wn.weight().t()) + bias;
  CHECK(all_close(outputs.mean({0}), std::vector<double>(3, 0.0), 1e-9, 1e-9));
  CHECK(all_close(sqrt(outputs.var({0})), std::vector<double>(3, 2.0), 1e-6, 1e-6));
  CHECK_FALSE(bias.requires_grad());

  // Convolution outputs [N, C, H, W]: the statistics are per channel over N, H and W.
  nn::WeightNorm conv(randn({2, 3, 3, 3}, generator, {.dtype = DType::Float64}));
  const Tensor maps = randn({4, 2, 5, 5}, generator, {.dtype = DType::Float64}) * 7.0 + 3.0;
  const Tensor gain_before = conv.gain.clone();
  const Tensor conv_bias = conv.init_from_data(maps);
  // The outputs scale with g, so the new outputs would be maps * (g_new / g_old) + bias.
  const Tensor scaled = maps * (conv.gain / gain_before).view({1, 2, 1, 1}) +
                        conv_bias.view({1, 2, 1, 1});
  CHECK(all_close(scaled.mean({0, 2, 3}), std::vector<double>(2, 0.0), 1e-9, 1e-9));
  CHECK(all_close(sqrt(scaled.var({0, 2, 3})), std::vector<double>(2, 1.0), 1e-6, 1e-6));
}

TEST_CASE("WeightNorm refuses bad weights, gains and data") {
  const Tensor none;
  CHECK_ERROR(nn::WeightNorm(zeros({0, 3})), "WeightNorm", "[0, 3]");
  CHECK_ERROR(nn::WeightNorm(zeros({2, 3}, {.dtype = DType::Int64})), "WeightNorm", "int64");
  CHECK_ERROR(nn::weight_norm(zeros({4, 3}), zeros({3})), "weight_norm", "[4]", "[3]");
  CHECK_ERROR(nn::weight_norm(none, zeros({3})), "weight_norm", "defined");
  nn::WeightNorm wn(ones({3, 2}));
  CHECK_ERROR(wn.init_from_data(zeros({8, 4})), "init_from_data", "[8, 4]", "3");
  CHECK_ERROR(wn.init_from_data(zeros({1, 3})), "init_from_data", "at least 2");
  CHECK_ERROR(wn.init_from_data(zeros({8, 3}), 1, -1.0), "init_from_data", "-1");
}

TEST_CASE("WeightNorm::reset starts again from a given weight, and refuses another shape") {
  nn::WeightNorm wn(randn({3, 4}));
  const Tensor fresh = randn({3, 4});
  wn.reset(fresh);
  CHECK(all_close(wn.weight(), fresh.to_vector<double>(), 1e-6, 1e-6));
  CHECK(all_close(wn.direction, fresh.to_vector<double>(), 0, 0));
  CHECK(all_close(wn.gain, sqrt(square(fresh).sum({1})).to_vector<double>(), 1e-6, 1e-7));
  CHECK_ERROR(wn.reset(randn({4, 3})), "WeightNorm::reset", "[3, 4]", "[4, 3]");
}

// ---- on a GPU: CPU against CUDA ----------------------------------------------------------------

// The CUDA kernels against the CPU's, values and the gradients of v and g, within the fused
// normalisers' bounds (testing::norm_values and testing::norm_gradients).

using testing::norm_gradients;
using testing::norm_values;
using testing::normal;
using testing::parity_mismatch;

TEST_CASE("cuda parity: weight_norm, values and the gradients of v and g") {
  SKIP_PARITY_WITHOUT_CUDA();
  for (const DType dtype : {DType::Float32, DType::Float64}) {
    for (const Shape& shape : {Shape{6, 33}, Shape{4, 3, 3, 3}, Shape{2, 4097}, Shape{5}}) {
      for (const double eps : {0.0, 1e-3}) {
        INFO(dtype << ", " << shape << ", eps " << eps);
        CHECK_NO_MISMATCH(
            parity_mismatch([eps](const Inputs& in) { return nn::weight_norm(in[0], in[1], eps); },
                            {normal(shape, 15, dtype), normal({shape[0]}, 16, dtype)},
                            norm_values(dtype), norm_gradients(dtype)));
      }
    }
    // A transposed v: its rows are strided.
    INFO(dtype << ", transposed v");
    CHECK_NO_MISMATCH(
        parity_mismatch([](const Inputs& in) { return nn::weight_norm(in[0].t(), in[1]); },
                        {normal({9, 4}, 17, dtype), normal({4}, 18, dtype)}, norm_values(dtype),
                        norm_gradients(dtype)));
  }
}
