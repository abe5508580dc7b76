// CPU-versus-CUDA parity of the normalisers, forward and backward (dx, dgain, dbias): the fused
// LayerNorm, RMSNorm (eps inside and outside the root), pRMSNorm and L2Norm in the feature
// layout (rows from 1 to 4097 values, contiguous or transposed, with and without gain and
// bias) and the spatial layout (per-channel gain and bias over [N, C, H, W]); the norm modules
// moved with Module::to; BatchNorm in training and evaluation, its running estimates
// included; and WeightNorm.
//
// Tolerances: testing::norm_values and testing::norm_gradients, the bounds the fused kernels
// meet against their composed twins (test_norm.cpp): the row statistics and the batch
// sums of dgain and dbias are reduced in another order on the GPU.

#include <algorithm>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "cuda_parity.h"
#include "module_gradcheck.h"

using namespace normgrad;
using testing::Inputs;
using testing::module_parity_mismatch;
using testing::norm_gradients;
using testing::norm_values;
using testing::normal;
using testing::parity_mismatch;

namespace {

const Tensor none;

using NormFunction = std::function<Tensor(const Tensor& x, const Tensor& gain, const Tensor& bias)>;

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

// Gradient tolerances for (x, gain, bias): dx is a per-row formula (norm_gradients); dgain and
// dbias sum over `rows` rows, in another order on the GPU (testing::summed, terms of |dy x̂|
// below about 8), whichever bound is larger.
std::vector<testing::Tolerance> affine_gradients(DType dtype, double rows) {
  const testing::Tolerance dx = norm_gradients(dtype);
  const testing::Tolerance summed = testing::summed(dtype, rows, 8.0);
  const testing::Tolerance affine{dx.rtol, std::max(dx.atol, summed.atol)};
  return {dx, affine, affine};
}

// Inputs: x (mean 0.5, scale 3, as in test_norm.cpp), gain and bias.
Inputs norm_inputs(const Shape& x_shape, const Shape& affine_shape, DType dtype) {
  return {normal(x_shape, 1, dtype, 3.0) + 0.5, normal(affine_shape, 2, dtype),
          normal(affine_shape, 3, dtype)};
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

TEST_CASE("cuda parity: batch_norm in training and evaluation, values and gradients") {
  SKIP_PARITY_WITHOUT_CUDA();
  for (const DType dtype : {DType::Float32, DType::Float64}) {
    for (const Shape& shape :
         {Shape{8, 5}, Shape{6, 4, 7}, Shape{4, 3, 5, 6}, Shape{64, 16, 8, 8}}) {
      INFO(dtype << ", " << shape);
      const double per_channel = static_cast<double>(numel(shape) / shape[1]);
      const Inputs inputs = norm_inputs(shape, {shape[1]}, dtype);
      const std::vector<testing::Tolerance> gradients = affine_gradients(dtype, per_channel);
      // Training: the batch's statistics, functions of x.
      CHECK_NO_MISMATCH(parity_mismatch(
          [](const Inputs& in) { return batch_norm(in[0], in[1], in[2], none, none, true); },
          inputs, norm_values(dtype), gradients));
      CHECK_NO_MISMATCH(parity_mismatch(
          [](const Inputs& in) { return batch_norm(in[0], none, none, none, none, true); },
          {inputs[0]}, norm_values(dtype), gradients));
      // Evaluation: the running estimates, captured and moved to the inputs' device.
      const Tensor running_mean = normal({shape[1]}, 11, dtype);
      const Tensor running_var = testing::uniform({shape[1]}, 12, 0.5, 2.0, dtype);
      CHECK_NO_MISMATCH(parity_mismatch(
          [&](const Inputs& in) {
            return batch_norm(in[0], in[1], in[2], testing::on_device_of(running_mean, in[0]),
                                  testing::on_device_of(running_var, in[0]), false);
          },
          inputs, norm_values(dtype), gradients));
    }
  }
}

TEST_CASE("cuda parity: BatchNorm2d modules update the same running estimates") {
  SKIP_PARITY_WITHOUT_CUDA();
  const Device gpu = testing::parity_device();
  nn::BatchNorm2d host(6, {.momentum = 0.2}), device(6, {.momentum = 0.2});
  testing::randomise(host, 13);
  testing::randomise(device, 13);
  device.to(gpu);
  for (int step = 0; step < 3; ++step) {
    CAPTURE(step);
    const Tensor x =
        normal({5, 6, 7, 3}, 14 + static_cast<std::uint64_t>(step), DType::Float32, 2.0) + 1.0;
    CHECK_NO_MISMATCH(testing::mismatch(host.forward(x), device.forward(x.to(gpu)),
                                        norm_values(DType::Float32), "training output"));
    CHECK_NO_MISMATCH(testing::mismatch(host.running_mean, device.running_mean,
                                        testing::summed(DType::Float32, 105, 4.0), "running_mean"));
    CHECK_NO_MISMATCH(testing::mismatch(host.running_var, device.running_var,
                                        testing::summed(DType::Float32, 105, 16.0), "running_var"));
  }
  host.eval();
  device.eval();
  const Tensor x = normal({2, 6, 4, 4}, 20);
  CHECK_NO_MISMATCH(testing::mismatch(host.forward(x), device.forward(x.to(gpu)),
                                      norm_values(DType::Float32), "evaluation output"));
}

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
