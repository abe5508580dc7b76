// conv2d (autograd/functions/conv.cpp, backends/cpu/im2col.cpp) against finite differences,
// against a composed twin built from slices and matmul (values and gradients), against a
// value worked out by hand, and the Conv2d module and the errors; the implicit-GEMM
// convolution's addressing against im2col; on a GPU, the CUDA kernels against the CPU's over
// the same geometries (by columns, a weight gradient accumulated over chunks of samples, and
// as an implicit GEMM at its tiles' edges), TF32's rounding, and the Conv2d module; and the
// implicit-GEMM kernel on bfloat16, the float32 kernel rounded once.

#include <cmath>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "backends/conv_by_columns.h"
#include "backends/dispatch.h"
#include "backends/implicit_columns.h"
#include "bfloat16_twins.h"
#include "core/tensor_internal.h"
#include "cuda_parity.h"
#include "helpers.h"

using namespace normgrad;
using testing::all_close;
using testing::leaf;
using Inputs = std::vector<Tensor>;

namespace {

struct Geometry {
  Size2d stride = 1, padding = 0, dilation = 1;
};

// Zeros around the last two dims of x, built from cat so that it is differentiable.
Tensor pad_zeros(const Tensor& x, Size2d padding) {
  const TensorOptions options{.dtype = x.dtype()};
  Tensor padded = x;
  if (padding.h > 0) {
    const Tensor rows = zeros({x.size(0), x.size(1), padding.h, x.size(3)}, options);
    padded = cat({rows, padded, rows}, 2);
  }
  if (padding.w > 0) {
    const Tensor cols = zeros({x.size(0), x.size(1), padded.size(2), padding.w}, options);
    padded = cat({cols, padded, cols}, 3);
  }
  return padded;
}

// The composed twin: y = b + sum over taps (i, j) of W[:, :, i, j] @ (the strided slice of
// the padded input that tap (i, j) sees), one matmul per tap.
Tensor conv2d_composed(const Tensor& x, const Tensor& weight, const Tensor& bias, Geometry g) {
  const Tensor padded = pad_zeros(x, g.padding);
  const std::int64_t n = x.size(0), c = x.size(1), o = weight.size(0);
  const std::int64_t kh = weight.size(2), kw = weight.size(3);
  const std::int64_t out_h = (padded.size(2) - g.dilation.h * (kh - 1) - 1) / g.stride.h + 1;
  const std::int64_t out_w = (padded.size(3) - g.dilation.w * (kw - 1) - 1) / g.stride.w + 1;
  Tensor y;
  for (std::int64_t i = 0; i < kh; ++i)
    for (std::int64_t j = 0; j < kw; ++j) {
      const std::int64_t h0 = i * g.dilation.h, w0 = j * g.dilation.w;
      const Tensor seen = padded.slice(2, h0, h0 + (out_h - 1) * g.stride.h + 1, g.stride.h)
                              .slice(3, w0, w0 + (out_w - 1) * g.stride.w + 1, g.stride.w)
                              .reshape({n, c, out_h * out_w});
      const Tensor tap = matmul(weight.select(3, j).select(2, i), seen);
      y = y.defined() ? y + tap : tap;
    }
  y = y.reshape({n, o, out_h, out_w});
  if (bias.defined()) y = y + bias.reshape({1, o, 1, 1});
  return y;
}

struct ConvCase {
  Shape input, weight;
  Geometry geometry;
  bool bias;
};

const std::vector<ConvCase> cases = {
    {{2, 3, 7, 6}, {4, 3, 2, 3}, {2, 1, 2}, true},                 // stride 2, pad 1, dil 2
    {{2, 3, 7, 6}, {4, 3, 2, 3}, {2, 1, 2}, false},                // the same without bias
    {{1, 2, 5, 8}, {3, 2, 3, 1}, {{2, 1}, {0, 2}, {1, 3}}, true},  // per-dim settings
    {{2, 4, 5, 3}, {6, 4, 1, 1}, {}, true},                        // 1x1 ("network in network")
    {{2, 3, 6, 6}, {5, 3, 3, 3}, {1, 1, 1}, true},                 // the paper's 3x3, pad 1
    {{1, 2, 4, 4}, {2, 2, 4, 4}, {1, 0, 1}, true},                 // kernel covers the input
    {{1, 2, 7, 5}, {3, 2, 3, 3}, {1, 2, 2}, true},                 // "same" width, dilation 2
    {{2, 2, 1, 4}, {2, 2, 3, 3}, {1, 1, 1}, false},                // rows of taps in padding
};

}  // namespace

TEST_CASE("conv2d: gradients match finite differences in float64") {
  for (const ConvCase& c : cases) {
    const Geometry g = c.geometry;
    CAPTURE(c.input);
    CAPTURE(c.weight);
    Inputs inputs{leaf(c.input, 3), leaf(c.weight, 4, 0.5)};
    if (c.bias) inputs.push_back(leaf({c.weight[0]}, 5));
    CHECK_GRADIENTS(
        [g](const Inputs& in) {
          return conv2d(in[0], in[1], in.size() > 2 ? in[2] : Tensor(), g.stride, g.padding,
                        g.dilation);
        },
        inputs);
  }
}

TEST_CASE("conv2d: values and gradients equal the composed twin in float32 and float64") {
  for (const DType dtype : {DType::Float32, DType::Float64}) {
    const double tolerance = dtype == DType::Float32 ? 1e-5 : 1e-12;
    for (const ConvCase& c : cases) {
      CAPTURE(dtype);
      CAPTURE(c.input);
      CAPTURE(c.weight);
      Generator generator(11);
      const TensorOptions options{.dtype = dtype};
      const Tensor x0 = randn(c.input, generator, options);
      const Tensor w0 = randn(c.weight, generator, options);
      const Tensor b0 = c.bias ? randn({c.weight[0]}, generator, options) : Tensor();
      struct Result {
        Tensor y, dx, dw, db;
      };
      const auto run = [&](bool fused) {
        const Tensor x = x0.clone().requires_grad_(), w = w0.clone().requires_grad_();
        const Tensor b = c.bias ? b0.clone().requires_grad_() : Tensor();
        const Geometry g = c.geometry;
        Tensor y =
            fused ? conv2d(x, w, b, g.stride, g.padding, g.dilation) : conv2d_composed(x, w, b, g);
        Generator dy_generator(12);
        (y * randn(y.shape(), dy_generator, options)).sum().backward();
        return Result{y.detach(), x.grad(), w.grad(), c.bias ? b.grad() : Tensor()};
      };
      const Result fused = run(true), composed = run(false);
      CHECK(all_close(fused.y, composed.y, tolerance, tolerance));
      CHECK(all_close(fused.dx, composed.dx, tolerance, tolerance));
      CHECK(all_close(fused.dw, composed.dw, tolerance, tolerance));
      if (c.bias) CHECK(all_close(fused.db, composed.db, tolerance, tolerance));
    }
  }
}

// Ten samples of 128 channels at 32 x 32 with a 3x3 kernel have 1.1 Mi column values each,
// so conv2d works in chunks of 7 and 3 samples; the chunk seams must not show.
TEST_CASE("conv2d: a batch split into im2col chunks equals the composed twin") {
  Generator generator(13);
  const TensorOptions options{.dtype = DType::Float64};
  const Tensor x0 = randn({10, 128, 32, 32}, generator, options);
  const Tensor w0 = randn({4, 128, 3, 3}, generator, options);
  const Tensor dy = randn({10, 4, 32, 32}, generator, options);
  std::vector<Tensor> results;
  for (const bool fused : {true, false}) {
    const Tensor x = x0.clone().requires_grad_(), w = w0.clone().requires_grad_();
    const Tensor y = fused ? conv2d(x, w, Tensor(), 1, 1) : conv2d_composed(x, w, Tensor(), {1, 1});
    (y * dy).sum().backward();
    results.insert(results.end(), {y.detach(), x.grad(), w.grad()});
  }
  for (std::size_t i = 0; i < 3; ++i) CHECK(all_close(results[i], results[i + 3], 1e-11, 1e-11));
}

// The convolution by columns on bfloat16 (CUDA's, whose kernels it runs there): bfloat16
// columns, the GEMM's float32 sums kept in float32 with the bias added to them, one rounding
// into y; the weight gradient summed over the chunks in float32 and rounded once. On the CPU,
// whose GEMM takes bfloat16 through float32 copies, that is the same function run on the
// float32 values, rounded once: y bit for bit, dw up to BLAS's order of addition. 64 channels of
// 64 x 64 make two chunks of 3 samples.
TEST_CASE("conv2d by columns on bfloat16: float32 sums with the bias, rounded once") {
  Generator generator(17);
  backend::Backend& cpu = backend::cpu_backend();
  const auto rounded = [](const Tensor& t) { return t.to(DType::BFloat16); };
  const Tensor x = rounded(randn({6, 64, 64, 64}, generator));
  const Tensor w = rounded(randn({4, 64, 3, 3}, generator));
  const Tensor bias = rounded(randn({4}, generator));
  const Tensor dy = rounded(randn({6, 4, 64, 64}, generator));
  REQUIRE(backend::conv_chunk_samples(64 * 9, 64 * 64, 6) == 3);
  const backend::Window2d window{.kernel_h = 3, .kernel_w = 3, .padding_h = 1, .padding_w = 1};
  Tensor y[2], dw[2];
  for (const DType dtype : {DType::BFloat16, DType::Float32}) {
    const int k = dtype == DType::BFloat16 ? 0 : 1;
    y[k] = empty({6, 4, 64, 64}, {.dtype = dtype});
    dw[k] = empty(w.shape(), {.dtype = dtype});
    const Tensor bias_of_dtype = bias.to(dtype);  // alive for as long as the reference
    const backend::TensorRef bias_ref = detail::ref(bias_of_dtype);
    backend::conv2d_by_columns(cpu, detail::ref(y[k]), detail::ref(x.to(dtype)),
                               detail::ref(w.to(dtype)), &bias_ref, window);
    backend::conv2d_weight_gradient_by_columns(cpu, detail::ref(dw[k]), detail::ref(x.to(dtype)),
                                               detail::ref(dy.to(dtype)), window);
  }
  CHECK(y[0].dtype() == DType::BFloat16);
  CHECK(dw[0].dtype() == DType::BFloat16);
  const auto as_double = [](const Tensor& t) { return t.to(DType::Float64); };
  CHECK(all_close(as_double(y[0]), as_double(rounded(y[1])), 0, 0));
  // dw's GEMMs read the columns transposed, which the float32 side hands BLAS as a view and the
  // bfloat16 side as a row-major float32 copy: BLAS may add in another order for the two, so
  // dw is held to one bfloat16 step, and all but 1% of it to the same bits (measured: all).
  // Summing the two chunks in bfloat16 instead would move 27.5% of the values.
  const Tensor expected_dw = as_double(rounded(dw[1]));
  const Tensor dw_error = (as_double(dw[0]) - expected_dw).abs();
  CHECK(min(le(dw_error, expected_dw.abs() * 0x1p-7).to(DType::Float64)).item() == 1.0);
  CHECK(ne(dw_error, 0.0).to(DType::Float64).mean().item() <= 0.01);
  // Had the product been rounded before the bias was added, some values would differ.
  const Tensor bias_column = bias.to(DType::Float32).reshape({1, 4, 1, 1});
  const Tensor rounded_twice =
      rounded(rounded(y[1] - bias_column).to(DType::Float32) + bias_column);
  CHECK(!all_close(as_double(y[0]), as_double(rounded_twice), 0, 0));
}

TEST_CASE("conv2d: a small case worked out by hand") {
  // x = [[1, 2, 3], [4, 5, 6], [7, 8, 9]], a 2x2 kernel of ones, padding 1, stride 2: the
  // windows at the corners of the padded 5x5 image see one pixel each, plus bias 0.5.
  const Tensor x = arange(1, 10, 1, {.dtype = DType::Float64}).reshape({1, 1, 3, 3});
  const Tensor w = ones({1, 1, 2, 2}, {.dtype = DType::Float64});
  const Tensor b = full({1}, 0.5, {.dtype = DType::Float64});
  const Tensor y = conv2d(x, w, b, 2, 1);
  CHECK(y.shape() == Shape{1, 1, 2, 2});
  CHECK(all_close(y, {1.5, 5.5, 11.5, 28.5}));
  // Dilation 2 with a 2x2 kernel reads the four corners: 1 + 3 + 7 + 9.
  CHECK(all_close(conv2d(x, w, Tensor(), 1, 0, 2), {20.0}));
}

TEST_CASE("conv2d: strided views as input, weight and upstream gradient") {
  Generator generator(17);
  const TensorOptions options{.dtype = DType::Float64};
  // x [2, 3, 6, 5] stored channels-last; the weight [4, 3, 2, 3] stored with kh and kw swapped.
  const Tensor x_view = randn({2, 6, 5, 3}, generator, options).permute({0, 3, 1, 2});
  const Tensor w_view = randn({4, 3, 3, 2}, generator, options).transpose(2, 3);
  const Tensor b = randn({4}, generator, options);
  // y is [2, 4, 4, 5]: rows (6 + 2 - 2) / 2 + 1, columns (5 + 2 - 3) / 1 + 1.
  const Tensor dy_view = randn({2, 4, 5, 4}, generator, options).transpose(2, 3);
  REQUIRE_FALSE(x_view.is_contiguous());
  REQUIRE_FALSE(w_view.is_contiguous());
  REQUIRE_FALSE(dy_view.is_contiguous());
  std::vector<Tensor> results;
  for (const bool contiguous : {false, true}) {
    Tensor x = (contiguous ? x_view.contiguous() : x_view).detach().requires_grad_();
    Tensor w = (contiguous ? w_view.contiguous() : w_view).detach().requires_grad_();
    const Tensor y = conv2d(x, w, b, {2, 1}, 1);
    y.backward(contiguous ? dy_view.contiguous() : dy_view);
    results.insert(results.end(), {y.detach(), x.grad(), w.grad()});
  }
  for (std::size_t i = 0; i < 3; ++i) CHECK(all_close(results[i], results[i + 3], 0, 0));
}

// im2col and col2im split the work by (sample, channel) plane, each written by one thread,
// so they add in the same order on any thread count. OpenBLAS may block its GEMM differently
// for another thread count, which moves the last bits, hence the float64 tolerance: a race or
// an overlap between threads' planes would show as errors of order 1.
TEST_CASE("conv2d: 1 and 2 threads agree") {
  Generator generator(21);
  const TensorOptions options{.dtype = DType::Float64};
  Tensor x = randn({8, 16, 20, 20}, generator, options).requires_grad_();
  Tensor w = randn({16, 16, 3, 3}, generator, options).requires_grad_();
  const auto run = [&](int threads) {
    set_num_threads(threads);
    x.zero_grad();
    w.zero_grad();
    const Tensor y = conv2d(x, w, Tensor(), 2, 1, 2);
    y.square().sum().backward();
    return std::vector<Tensor>{y.detach(), x.grad(), w.grad()};
  };
  const int before = get_num_threads();
  const auto one = run(1), two = run(2);
  set_num_threads(before);
  for (std::size_t i = 0; i < one.size(); ++i) CHECK(all_close(one[i], two[i], 1e-12, 1e-12));
}

// The addressing of the CUDA implicit-GEMM convolution (backends/implicit_columns.h), which
// reads im2col's columns from the image entry by entry: every entry, in 32-bit and 64-bit
// offsets, is the one im2col writes, over strides, padding (rows of taps wholly in it),
// dilation, per-dim settings and kernels that cover the input.
TEST_CASE("implicit columns: every entry is im2col's") {
  struct Case {
    Shape input;
    backend::Window2d window;
  };
  const std::vector<Case> layouts = {
      {{2, 3, 7, 6},
       {.kernel_h = 2,
        .kernel_w = 3,
        .stride_h = 2,
        .stride_w = 2,
        .padding_h = 1,
        .padding_w = 1,
        .dilation_h = 2,
        .dilation_w = 2}},
      {{1, 2, 5, 8},
       {.kernel_h = 3, .kernel_w = 1, .stride_h = 2, .padding_w = 2, .dilation_w = 3}},
      {{2, 4, 5, 3}, {}},
      {{3, 5, 6, 6}, {.kernel_h = 3, .kernel_w = 3, .padding_h = 1, .padding_w = 1}},
      {{1, 2, 4, 4}, {.kernel_h = 4, .kernel_w = 4}},
      {{2, 2, 1, 4}, {.kernel_h = 3, .kernel_w = 3, .padding_h = 1, .padding_w = 1}},
      {{2, 3, 9, 11},
       {.kernel_h = 3,
        .kernel_w = 2,
        .stride_h = 3,
        .stride_w = 2,
        .padding_h = 2,
        .padding_w = 1,
        .dilation_h = 2}},
  };
  for (const Case& c : layouts) {
    INFO("input " << c.input);
    const backend::Window2d& k = c.window;
    const std::int64_t out_h =
        (c.input[2] + 2 * k.padding_h - k.dilation_h * (k.kernel_h - 1) - 1) / k.stride_h + 1;
    const std::int64_t out_w =
        (c.input[3] + 2 * k.padding_w - k.dilation_w * (k.kernel_w - 1) - 1) / k.stride_w + 1;
    const std::int64_t taps = c.input[1] * k.kernel_h * k.kernel_w, positions = out_h * out_w;
    const Tensor image =
        arange(1, 1 + static_cast<double>(numel(c.input)), 1, {.dtype = DType::Float64})
            .reshape(c.input);
    const Tensor columns = empty({c.input[0], taps, positions}, {.dtype = DType::Float64});
    backend::cpu_backend().im2col(detail::ref(columns), detail::ref(image), k);
    const std::vector<double> pixels = image.to_vector<double>();
    const std::vector<double> expected = columns.to_vector<double>();
    const auto check = [&](auto index_tag) {
      using Index = typename decltype(index_tag)::type;
      const auto g = backend::ImplicitColumns<Index>::of(c.input, out_h, out_w, k);
      REQUIRE(g.taps() == taps);
      std::int64_t wrong = 0;
      for (std::int64_t n = 0; n < c.input[0]; ++n)
        for (std::int64_t row = 0; row < taps; ++row)
          for (std::int64_t l = 0; l < positions; ++l) {
            const auto column = g.column(static_cast<Index>(n * positions + l));
            const Index at = g.offset(static_cast<Index>(row), column);
            const double value = at < 0 ? 0.0 : pixels[static_cast<std::size_t>(at)];
            wrong += value != expected[static_cast<std::size_t>((n * taps + row) * positions + l)];
          }
      CHECK(wrong == 0);
    };
    check(std::type_identity<std::int32_t>{});
    check(std::type_identity<std::int64_t>{});
  }
}

TEST_CASE("Conv2d module: shapes, parameters and the default initialisation") {
  Generator generator(7);
  nn::Conv2d conv(3, 8, 3, {.padding = 1}, generator);
  const auto named = conv.named_parameters();
  REQUIRE(named.size() == 2);
  CHECK(named[0].first == "weight");
  CHECK(named[1].first == "bias");
  CHECK(conv.weight.shape() == Shape{8, 3, 3, 3});
  CHECK(conv.bias.shape() == Shape{8});
  // U(-1/sqrt(fan_in), 1/sqrt(fan_in)) with fan_in = 27, for weight and bias.
  const double bound = 1 / std::sqrt(27.0);
  for (const Tensor& p : {conv.weight, conv.bias}) {
    CHECK(max(abs(p)).item() <= bound);
    CHECK(max(abs(p)).item() > 0.5 * bound);
  }
  CHECK(conv.forward(randn({2, 3, 10, 10}, generator)).shape() == Shape{2, 8, 10, 10});

  nn::Conv2d nin(8, 4, 1, {.bias = false, .dtype = DType::Float64});
  CHECK_FALSE(nin.bias.defined());
  CHECK(nin.parameters().size() == 1);
  CHECK(nin.forward(randn({2, 8, 5, 5}, {.dtype = DType::Float64})).shape() == Shape{2, 4, 5, 5});

  nn::Conv2d strided(2, 2, {3, 2}, {.stride = {2, 1}, .padding = {0, 1}}, generator);
  CHECK(strided.forward(randn({1, 2, 7, 4}, generator)).shape() == Shape{1, 2, 3, 5});
}

TEST_CASE("conv2d: errors name the op and the shapes") {
  const Tensor x = randn({2, 3, 5, 5});
  const Tensor w = randn({4, 3, 3, 3});
  CHECK_ERROR(conv2d(randn({3, 5, 5}), w), "conv2d", "[N, C, H, W]", "[3, 5, 5]");
  CHECK_ERROR(conv2d(x, randn({4, 3, 3})), "conv2d", "weight [O, C, kh, kw]", "[4, 3, 3]");
  CHECK_ERROR(conv2d(x, randn({4, 2, 3, 3})), "conv2d", "input channels", "[4, 2, 3, 3]",
              "[2, 3, 5, 5]");
  CHECK_ERROR(conv2d(x, randn({4, 3, 7, 3})), "conv2d", "larger than the padded input",
              "[2, 3, 5, 5]");
  CHECK_ERROR(conv2d(x, randn({4, 3, 3, 3}), Tensor(), 1, 0, 3), "conv2d",
              "larger than the padded input");
  CHECK_ERROR(conv2d(x, w, Tensor(), 0), "conv2d", "stride must be positive");
  CHECK_ERROR(conv2d(x, w, Tensor(), {1, -1}), "conv2d", "stride must be positive", "[1, -1]");
  CHECK_ERROR(conv2d(x, w, Tensor(), 1, -1), "conv2d", "padding must be non-negative");
  CHECK_ERROR(conv2d(x, w, Tensor(), 1, 0, 0), "conv2d", "dilation must be positive");
  CHECK_ERROR(conv2d(x, w.to(DType::Float64)), "conv2d", "dtypes differ");
  CHECK_ERROR(conv2d(x, w, randn({3})), "conv2d", "bias [4]", "[3]");
  CHECK_ERROR(conv2d(x.to(DType::Int64), w.to(DType::Int64)), "conv2d", "floating");
  CHECK_ERROR(nn::Conv2d(0, 4, 3), "Conv2d", "positive");
  CHECK_ERROR(nn::Conv2d(3, 4, {3, 0}), "Conv2d", "kernel size must be positive");
  nn::Conv2d conv(3, 4, 3);
  CHECK_ERROR(conv.forward(randn({2, 5, 8, 8})), "conv2d", "input channels");
}

namespace {

// A miniature of the paper's ConvPool-CNN-C (paper, Appendix A.4): 3x3 convolutions with padding 1
// and 0, a 2x2 max-pool, a 1x1 convolution and global average pooling.
struct TinyConvPoolNet : nn::Module {
  std::shared_ptr<nn::Conv2d> conv1, conv2, nin;
  std::shared_ptr<nn::MaxPool2d> pool;
  std::shared_ptr<nn::GlobalAvgPool2d> global_pool;

  explicit TinyConvPoolNet(Generator& generator) {
    conv1 = register_module(
        "conv1", std::make_shared<nn::Conv2d>(3, 8, 3, nn::Conv2dOptions{.padding = 1}, generator));
    pool = register_module("pool", std::make_shared<nn::MaxPool2d>(2));
    conv2 = register_module("conv2",
                            std::make_shared<nn::Conv2d>(8, 8, 3, nn::Conv2dOptions{}, generator));
    nin = register_module("nin",
                          std::make_shared<nn::Conv2d>(8, 2, 1, nn::Conv2dOptions{}, generator));
    global_pool = register_module("global_pool", std::make_shared<nn::GlobalAvgPool2d>());
  }

  Tensor forward(const Tensor& x) const {
    Tensor h = pool->forward(relu(conv1->forward(x)));
    h = relu(conv2->forward(h));
    return global_pool->forward(nin->forward(h));
  }
};

}  // namespace

TEST_CASE("Conv2d and pooling: a small ConvPool network fits its targets under SGD") {
  Generator generator(61);
  TinyConvPoolNet net(generator);
  CHECK(net.named_parameters().size() == 6);
  const Tensor x = randn({16, 3, 8, 8}, generator);
  // Targets the network can reach: a fixed function of the input's channel means.
  const Tensor means = mean(x, {2, 3});
  const Tensor target =
      cat({means.narrow(1, 0, 1) - means.narrow(1, 1, 1), means.narrow(1, 2, 1) * 2.0}, 1).detach();
  optim::SGD sgd(net.parameters(), {.lr = 0.2, .momentum = 0.9});
  double first = 0, last = 0;
  for (int step = 0; step < 150; ++step) {
    sgd.zero_grad();
    const Tensor loss = nn::mse_loss(net.forward(x), target);
    loss.backward();
    sgd.step();
    if (step == 0) first = loss.item();
    last = loss.item();
  }
  INFO("loss " << first << " -> " << last);
  CHECK(last < 0.2 * first);
}

TEST_CASE("conv2d and pooling: an empty batch gives empty results and gradients") {
  Tensor x = zeros({0, 3, 6, 6}, {.dtype = DType::Float64}).requires_grad_();
  Tensor w = ones({4, 3, 3, 3}, {.dtype = DType::Float64}).requires_grad_();
  Tensor b = ones({4}, {.dtype = DType::Float64}).requires_grad_();
  const Tensor y = conv2d(x, w, b, 1, 1);
  CHECK(y.shape() == Shape{0, 4, 6, 6});
  (y.sum() + max_pool2d(x, 2).sum() + avg_pool2d(x, 2).sum()).backward();
  CHECK(x.grad().shape() == Shape{0, 3, 6, 6});
  CHECK(all_close(w.grad(), zeros({4, 3, 3, 3}, {.dtype = DType::Float64})));
  CHECK(all_close(b.grad(), {0, 0, 0, 0}));
}

// ---- on a GPU: CPU against CUDA ----------------------------------------------------------------

// The CUDA kernels against the CPU's, values and gradients. Tolerances: a convolution output
// sums C kh kw products, its weight gradient N OH OW and its input gradient O kh kw:
// testing::summed with the largest of these.

using testing::exact;
using testing::normal;
using testing::parity_mismatch;
using testing::summed;

namespace {

// The geometries above, and one with more channels.
const std::vector<ConvCase> conv_cases = [] {
  std::vector<ConvCase> all = cases;
  all.push_back({{3, 16, 13, 11}, {8, 16, 3, 3}, {1, 1, 1}, true});
  return all;
}();

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
  std::vector<ConvCase> gemm_cases = conv_cases;
  // Tiles are 64 channels by 64 outputs, in steps of 16 taps. O = 70: a second row of tiles
  // holding 6; K = 45: the last step holds 13; N L = 3 * 143 = 429: the last tile holds 45.
  gemm_cases.push_back({{3, 5, 11, 13}, {70, 5, 3, 3}, {1, 1, 1}, true});
  // Whole tiles only: O = 128, K = 288 (18 steps), N L = 2 * 64 = 128.
  gemm_cases.push_back({{2, 32, 16, 16}, {128, 32, 3, 3}, {2, 1, 1}, true});
  // N L = 16384 outputs: the weight gradient sums 64 shares of 256 outputs, then adds them.
  gemm_cases.push_back({{16, 8, 32, 32}, {8, 8, 3, 3}, {1, 1, 1}, true});
  // A CIFAR model's layer at a small batch: 96 channels, 3 x 3, 16 x 16.
  gemm_cases.push_back({{2, 96, 16, 16}, {96, 96, 3, 3}, {1, 1, 1}, false});
  for (const DType dtype : {DType::Float32, DType::Float64})
    for (const ConvCase& c : gemm_cases) check_conv_parity(c, dtype);
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

// ---- bfloat16 ----------------------------------------------------------------------------------

using namespace testing::twins;

// The implicit-GEMM convolution gathers its columns into float32 slices and runs the float32
// kernel's multiply-add chains, so on bfloat16 it is that kernel, bit for bit, rounded once.
// (The convolution by columns hands bfloat16 to cuBLAS, which adds in another order than its
// float32 product: test_bfloat16.cpp holds it to the CPU within a bfloat16 step.)
TEST_CASE("bfloat16 kernels: implicit-GEMM convolutions are the float32 kernels, rounded once") {
  for (const Device device : devices_present()) {
    CAPTURE(device);
    Generator generator(50);
    backend::Backend& kernels = backend::backend_for(device);
    const cuda::ConvAlgorithm before = cuda::conv_algorithm();
    cuda::set_conv_algorithm(cuda::ConvAlgorithm::ImplicitGemm);
    const backend::Window2d window{
        .kernel_h = 3, .kernel_w = 3, .stride_h = 2, .stride_w = 2, .padding_h = 1, .padding_w = 1};
    // 70 output channels and 8 x 8 x 8 outputs: partial tiles in both dimensions, and the
    // weight gradient's outputs in two splits.
    const Twin x = input_twin(device, {8, 5, 15, 15}, generator),
               weight = input_twin(device, {70, 5, 3, 3}, generator);
    const Twin bias = input_twin(device, {70}, generator),
               dy = input_twin(device, {8, 70, 8, 8}, generator);
    const Twin y = output_twin(device, {8, 70, 8, 8}), dw = output_twin(device, {70, 5, 3, 3});
    for (const bool narrow : {true, false}) {
      const backend::TensorRef bias_ref = bias.ref(narrow);
      kernels.conv2d(y.ref(narrow), x.ref(narrow), weight.ref(narrow), &bias_ref, window);
      kernels.conv2d_weight_gradient(dw.ref(narrow), x.ref(narrow), dy.ref(narrow), window);
    }
    cuda::set_conv_algorithm(before);
    CHECK_NO_MISMATCH(twin_mismatch(y, "y"));
    CHECK_NO_MISMATCH(twin_mismatch(dw, "dw"));
  }
}

TEST_CASE_FIXTURE(GpuScratch, "bfloat16 kernels: convolutions copy nothing") {
  SKIP_WITHOUT_CUDA();  // the CPU computes bfloat16 on float32 copies by design
  // A 3 x 3 convolution of 96 channels at 32 x 32, batch 32 (6 MiB of bfloat16 images). By
  // columns: a chunk of 9 samples' bfloat16 columns (16 MiB in blocks), their float32 product
  // (4 MiB) and the float32 bias; for the weight gradient the columns, the chunk's rows of dy
  // (2 MiB) and the float32 sums of dw. Copies would add 12 MiB for x alone and double the
  // columns. The implicit GEMM's forward takes no scratch at all.
  const Tensor x = input({32, 96, 32, 32}), weight = input({96, 96, 3, 3}), bias = input({96});
  const Tensor dy = input({32, 96, 32, 32});
  const Tensor y = output({32, 96, 32, 32}), dw = output({96, 96, 3, 3});
  const backend::Window2d window{.kernel_h = 3, .kernel_w = 3, .padding_h = 1, .padding_w = 1};
  const backend::TensorRef bias_ref = r(bias);
  const std::int64_t taps = 96 * 9, positions = 32 * 32;
  const std::int64_t chunk = backend::conv_chunk_samples(taps, positions, 32);
  const std::size_t columns = allocator_block(taps * chunk * positions * 2);
  const cuda::ConvAlgorithm before = cuda::conv_algorithm();
  cuda::set_conv_algorithm(cuda::ConvAlgorithm::Columns);
  check_scratch("convolution by columns",
                columns + allocator_block(96 * chunk * positions * float32_bytes) +
                    allocator_block(96 * float32_bytes),
                [&] { kernels.conv2d(r(y), r(x), r(weight), &bias_ref, window); });
  check_scratch("convolution by columns, weight gradient",
                columns + allocator_block(96 * chunk * positions * 2) +
                    allocator_block(dw.numel() * float32_bytes),
                [&] { kernels.conv2d_weight_gradient(r(dw), r(x), r(dy), window); });
  cuda::set_conv_algorithm(cuda::ConvAlgorithm::ImplicitGemm);
  check_scratch("implicit-GEMM convolution", 0,
                [&] { kernels.conv2d(r(y), r(x), r(weight), &bias_ref, window); });
  cuda::set_conv_algorithm(before);
}
