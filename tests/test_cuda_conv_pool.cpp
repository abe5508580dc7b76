// CPU-versus-CUDA parity of convolution and pooling, values and gradients: conv2d over the
// geometries of test_conv.cpp (stride, padding, dilation, per-dim settings, 1x1, kernels that
// cover the input), a batch large enough that the weight gradient accumulates over several
// chunks of samples (the accumulating matmul), the same geometries and the tiles' edges with
// the implicit-GEMM kernel, the Conv2d module; max pooling (first maximum
// on ties, padding that never wins), average pooling (padding counted as zeros) and global
// average pooling.
//
// Tolerances: a convolution output sums C kh kw products, its weight gradient N OH OW and its
// input gradient O kh kw: testing::summed with the largest of these. Max pooling selects, so it
// is exact; average pooling adds kh kw values, and its backward adds the windows' shares.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "cuda_parity.h"

using namespace normgrad;
using testing::exact;
using testing::Inputs;
using testing::normal;
using testing::parity_mismatch;
using testing::summed;

namespace {

struct Geometry {
  Size2d stride = 1, padding = 0, dilation = 1;
};

struct ConvCase {
  Shape input, weight;
  Geometry geometry;
  bool bias;
};

const std::vector<ConvCase> conv_cases = {
    {{2, 3, 7, 6}, {4, 3, 2, 3}, {2, 1, 2}, true},                 // stride 2, pad 1, dil 2
    {{2, 3, 7, 6}, {4, 3, 2, 3}, {2, 1, 2}, false},                // the same without bias
    {{1, 2, 5, 8}, {3, 2, 3, 1}, {{2, 1}, {0, 2}, {1, 3}}, true},  // per-dim settings
    {{2, 4, 5, 3}, {6, 4, 1, 1}, {}, true},                        // 1x1
    {{2, 3, 6, 6}, {5, 3, 3, 3}, {1, 1, 1}, true},                 // 3x3, pad 1
    {{1, 2, 4, 4}, {2, 2, 4, 4}, {1, 0, 1}, true},                 // kernel covers the input
    {{1, 2, 7, 5}, {3, 2, 3, 3}, {1, 2, 2}, true},                 // dilation 2, pad 2
    {{2, 2, 1, 4}, {2, 2, 3, 3}, {1, 1, 1}, false},                // rows of taps in padding
    {{3, 16, 13, 11}, {8, 16, 3, 3}, {1, 1, 1}, true},             // more channels
};

// Gradient tolerances for (x, weight, bias): an input pixel's gradient adds O kh kw products,
// a weight's and a bias's N OH OW.
std::vector<testing::Tolerance> conv_gradients(DType dtype, const Shape& input, const Shape& weight,
                                               std::int64_t out_positions) {
  const double per_input = static_cast<double>(weight[0] * weight[2] * weight[3]);
  const double per_weight = static_cast<double>(input[0] * out_positions);
  return {summed(dtype, per_input), summed(dtype, per_weight), summed(dtype, per_weight)};
}

// conv2d of one case on the GPU against the CPU, values and gradients, with a contiguous input
// and with one read through a transpose of H and W.
void check_conv_parity(const ConvCase& c, DType dtype) {
  INFO(dtype << ", input " << c.input << ", weight " << c.weight);
  const Geometry g = c.geometry;
  Inputs inputs{normal(c.input, 1, dtype), normal(c.weight, 2, dtype)};
  if (c.bias) inputs.push_back(normal({c.weight[0]}, 3, dtype));
  const auto f = [g](const Inputs& in) {
    return conv2d(in[0], in[1], in.size() > 2 ? in[2] : Tensor(), g.stride, g.padding, g.dilation);
  };
  const Tensor probe = f(inputs);  // for the output size
  const std::int64_t positions = probe.size(2) * probe.size(3);
  const double taps = static_cast<double>(c.weight[1] * c.weight[2] * c.weight[3]);
  const auto gradients = conv_gradients(dtype, c.input, c.weight, positions);
  CHECK_NO_MISMATCH(parity_mismatch(f, inputs, summed(dtype, taps), gradients));
  CHECK_NO_MISMATCH(parity_mismatch(
      [g](const Inputs& in) {
        return conv2d(in[0].transpose(2, 3), in[1], Tensor(), g.stride, g.padding, g.dilation);
      },
      {normal({c.input[0], c.input[1], c.input[3], c.input[2]}, 4, dtype), inputs[1]},
      summed(dtype, taps), gradients));
}

// The CUDA convolution algorithm for a scope.
class ConvAlgorithmScope {
 public:
  explicit ConvAlgorithmScope(cuda::ConvAlgorithm algorithm) {
    cuda::set_conv_algorithm(algorithm);
  }
  ~ConvAlgorithmScope() { cuda::set_conv_algorithm(before_); }
  ConvAlgorithmScope(const ConvAlgorithmScope&) = delete;
  ConvAlgorithmScope& operator=(const ConvAlgorithmScope&) = delete;

 private:
  cuda::ConvAlgorithm before_ = cuda::conv_algorithm();
};

}  // namespace

TEST_CASE("cuda parity: conv2d over strides, padding and dilation, values and gradients") {
  SKIP_PARITY_WITHOUT_CUDA();
  for (const DType dtype : {DType::Float32, DType::Float64})
    for (const ConvCase& c : conv_cases) check_conv_parity(c, dtype);
}

TEST_CASE("cuda parity: conv2d as an implicit GEMM, values and gradients, at the tiles' edges") {
  SKIP_PARITY_WITHOUT_CUDA();
  const ConvAlgorithmScope implicit(cuda::ConvAlgorithm::ImplicitGemm);
  std::vector<ConvCase> cases = conv_cases;
  // Tiles are 64 channels by 64 outputs, in steps of 16 taps. O = 70: a second row of tiles
  // holding 6; K = 45: the last step holds 13; N L = 3 * 143 = 429: the last tile holds 45.
  cases.push_back({{3, 5, 11, 13}, {70, 5, 3, 3}, {1, 1, 1}, true});
  // Whole tiles only: O = 128, K = 288 (18 steps), N L = 2 * 64 = 128.
  cases.push_back({{2, 32, 16, 16}, {128, 32, 3, 3}, {2, 1, 1}, true});
  // N L = 16384 outputs: the weight gradient sums 64 shares of 256 outputs, then adds them.
  cases.push_back({{16, 8, 32, 32}, {8, 8, 3, 3}, {1, 1, 1}, true});
  // A CIFAR model's layer at a small batch: 96 channels, 3 x 3, 16 x 16.
  cases.push_back({{2, 96, 16, 16}, {96, 96, 3, 3}, {1, 1, 1}, false});
  for (const DType dtype : {DType::Float32, DType::Float64})
    for (const ConvCase& c : cases) check_conv_parity(c, dtype);
  if (!cuda::is_available()) return;
  // Each output is one chain of multiply-adds in a fixed order: run after run, the same bits.
  const Tensor x = normal({3, 5, 11, 13}, 11).to(Device::cuda());
  const Tensor w = normal({70, 5, 3, 3}, 12).to(Device::cuda());
  const Tensor b = normal({70}, 13).to(Device::cuda());
  CHECK_NO_MISMATCH(testing::bits_mismatch(conv2d(x, w, b, 1, 1).to(Device::cpu()),
                                           conv2d(x, w, b, 1, 1).to(Device::cpu()),
                                           "two implicit GEMMs"));
}

TEST_CASE("cuda parity: conv2d weight gradient accumulated over chunks of samples") {
  SKIP_PARITY_WITHOUT_CUDA();
  // 16 channels, 3x3 taps and 32 x 32 outputs are 147456 column values per sample: a batch of
  // 64 spans two chunks of the 2^23-value column budget, so dW = sum over chunks, each added
  // with matmul's accumulate form.
  const Shape input{64, 16, 32, 32}, weight{8, 16, 3, 3};
  for (const DType dtype : {DType::Float32, DType::Float64}) {
    INFO(dtype);
    CHECK_NO_MISMATCH(parity_mismatch(
        [](const Inputs& in) { return conv2d(in[0], in[1], in[2], 1, 1); },
        {normal(input, 5, dtype), normal(weight, 6, dtype, 0.2), normal({8}, 7, dtype)},
        summed(dtype, 144), conv_gradients(dtype, input, weight, 32 * 32)));
  }
}

TEST_CASE("cuda parity: with TF32 allowed, conv2d stays within TF32's rounding of its products") {
  SKIP_PARITY_WITHOUT_CUDA();
  // TF32 keeps 10 of float32's 23 mantissa bits of each operand, each rounded to nearest
  // (relative error 2^-11): a product is off by at most about 2^-10 of its size, so an output
  // y = sum w x by at most 2^-10 sum |w x|, plus float32's rounding of a sum of n terms, n 2^-24
  // sum |w x| at most (2^-13 covers n = 1024). Checked against float64 on the same inputs, over
  // a CIFAR model's 3 x 3 layer (K = 864 taps), forward and weight gradient (1024 outputs).
  const Device gpu = testing::parity_device();
  const Tensor x = normal({4, 96, 16, 16}, 21), w = normal({96, 96, 3, 3}, 22, DType::Float32, 0.1);
  const Tensor dy = normal({4, 96, 16, 16}, 23);
  const auto run = [&](bool tf32) {
    cuda::set_allow_tf32(tf32);
    const Tensor xg = x.to(gpu).detach().requires_grad_();
    const Tensor wg = w.to(gpu).detach().requires_grad_();
    const Tensor y = conv2d(xg, wg, Tensor(), 1, 1);
    y.backward(dy.to(gpu));
    cuda::set_allow_tf32(false);
    return std::vector<Tensor>{y.to(Device::cpu()), wg.grad().to(Device::cpu())};
  };
  const std::vector<Tensor> with_tf32 = run(true);
  CHECK_FALSE(cuda::allow_tf32());
  // Float64 references and the sums of |terms| that bound the error.
  const Tensor x64 = x.to(DType::Float64), w64 = w.to(DType::Float64), dy64 = dy.to(DType::Float64);
  const Tensor xr = x64.detach().requires_grad_(), wr = w64.detach().requires_grad_();
  const Tensor y64 = conv2d(xr, wr, Tensor(), 1, 1);
  y64.backward(dy64);
  const Tensor xa = abs(x64).detach().requires_grad_();
  const Tensor wa = abs(w64).detach().requires_grad_();
  const Tensor y_terms = conv2d(xa, wa, Tensor(), 1, 1);
  y_terms.backward(abs(dy64));
  const std::vector<Tensor> reference = {y64.detach(), wr.grad()};
  const std::vector<Tensor> terms = {y_terms.detach(), wa.grad()};
  for (std::size_t i = 0; i < 2; ++i) {
    CAPTURE(i);
    const Tensor error = abs(with_tf32[i].to(DType::Float64) - reference[i]);
    const Tensor bound = terms[i] * (std::ldexp(1.0, -10) + std::ldexp(1.0, -13)) + 1e-30;
    const double worst = max(error / bound).item();
    MESSAGE("TF32 error over its bound (0: exact; 1: at the bound): " << worst);
    CHECK(worst <= 1.0);
  }
}

TEST_CASE("cuda parity: the Conv2d module, moved with Module::to") {
  SKIP_PARITY_WITHOUT_CUDA();
  Generator generator(8);
  nn::Conv2d conv(3, 5, {3, 2}, {.stride = {2, 1}, .padding = {1, 0}, .dilation = 1}, generator);
  const Tensor x = normal({4, 3, 9, 8}, 9);
  CHECK_NO_MISMATCH(testing::module_parity_mismatch(
      conv, [&](const Inputs& in) { return conv.forward(in[0]); }, {x}, summed(DType::Float32, 18),
      summed(DType::Float32, 4 * 5 * 7)));  // the parameters' gradients add N OH OW terms
}

TEST_CASE("cuda parity: max_pool2d with ties and padding, exact") {
  SKIP_PARITY_WITHOUT_CUDA();
  for (const DType dtype : {DType::Float32, DType::Float64}) {
    Generator generator(10);
    // Distinct values, and small integers whose ties send the gradient to the first maximum.
    const Tensor distinct = normal({2, 3, 9, 8}, 11, dtype);
    const Tensor tied = randint(-2, 2, {2, 3, 9, 8}, generator).to(dtype);
    for (const Tensor& x : {distinct, tied}) {
      INFO(dtype);
      // Overlapping windows (stride < kernel): a pixel can win in several windows, and its
      // gradient adds their upstream values.
      CHECK_NO_MISMATCH(
          parity_mismatch([](const Inputs& in) { return max_pool2d(in[0], 2); }, {x}, exact));
      CHECK_NO_MISMATCH(
          parity_mismatch([](const Inputs& in) { return max_pool2d(in[0], 3, Size2d(1), 1); }, {x},
                          exact, summed(dtype, 9, 4.0)));
      CHECK_NO_MISMATCH(parity_mismatch(
          [](const Inputs& in) {
            return max_pool2d(in[0], {3, 2}, Size2d{2, 1}, {1, 0});
          },
          {x}, exact, summed(dtype, 6, 4.0)));
      // All-negative input: the padding (never a candidate) must not win with a 0.
      CHECK_NO_MISMATCH(parity_mismatch(
          [](const Inputs& in) { return max_pool2d(-abs(in[0]) - 1.0, 2, Size2d(2), 1); }, {x},
          exact));
      CHECK_NO_MISMATCH(parity_mismatch(
          [](const Inputs& in) { return max_pool2d(in[0].transpose(2, 3), 2); }, {x}, exact));
    }
  }
}

TEST_CASE("cuda parity: avg_pool2d with padding, and global average pooling") {
  SKIP_PARITY_WITHOUT_CUDA();
  for (const DType dtype : {DType::Float32, DType::Float64}) {
    INFO(dtype);
    const Tensor x = normal({2, 3, 9, 8}, 12, dtype);
    CHECK_NO_MISMATCH(parity_mismatch([](const Inputs& in) { return avg_pool2d(in[0], 2); }, {x},
                                      summed(dtype, 4, 4.0)));
    CHECK_NO_MISMATCH(
        parity_mismatch([](const Inputs& in) { return avg_pool2d(in[0], 3, Size2d(1), 1); }, {x},
                        summed(dtype, 9, 4.0)));
    CHECK_NO_MISMATCH(parity_mismatch(
        [](const Inputs& in) {
          return avg_pool2d(in[0].transpose(2, 3), {2, 3}, Size2d{1, 2}, {1, 1});
        },
        {x}, summed(dtype, 6, 4.0)));
    CHECK_NO_MISMATCH(parity_mismatch([](const Inputs& in) { return global_avg_pool2d(in[0]); },
                                      {x}, summed(dtype, 72, 4.0)));
    nn::MaxPool2d max_layer(2);
    nn::AvgPool2d avg_layer(3, Size2d(2), 1);
    nn::GlobalAvgPool2d global_layer;
    CHECK_NO_MISMATCH(parity_mismatch(
        [&](const Inputs& in) {
          return cat({max_layer.forward(in[0]).flatten(), avg_layer.forward(in[0]).flatten(),
                      global_layer.forward(in[0]).flatten()});
        },
        {x}, summed(dtype, 72, 4.0)));
  }
}
