// Pooling (autograd/functions/pool.cpp, backends/cpu/pool.cpp): finite differences, composed
// twins built from slices with maximum or sums, values worked out by hand, the modules, and
// the errors; on a GPU, the CUDA kernels against the CPU's: max pooling (first maximum on ties,
// padding that never wins), average pooling (padding counted as zeros) and global average
// pooling; and bfloat16 kernels that are the float32 ones, rounded once.

#include <cmath>
#include <limits>
#include <vector>

#include "bfloat16_twins.h"
#include "cuda_parity.h"
#include "helpers.h"

using namespace normgrad;
using testing::all_close;
using testing::leaf;
using Inputs = std::vector<Tensor>;

namespace {

// x padded by `value` around its last two dims, built from cat so that it is differentiable.
Tensor pad(const Tensor& x, Size2d padding, double value) {
  const TensorOptions options{.dtype = x.dtype()};
  Tensor padded = x;
  if (padding.h > 0) {
    const Tensor rows = full({x.size(0), x.size(1), padding.h, x.size(3)}, value, options);
    padded = cat({rows, padded, rows}, 2);
  }
  if (padding.w > 0) {
    const Tensor cols = full({x.size(0), x.size(1), padded.size(2), padding.w}, value, options);
    padded = cat({cols, padded, cols}, 3);
  }
  return padded;
}

// The composed twin: the window's taps as strided slices of the padded input, combined with
// maximum (padding -inf) or summed and divided by kh kw (padding 0).
Tensor pool_composed(const Tensor& x, Size2d kernel, Size2d stride, Size2d padding, bool is_max) {
  const double fill = is_max ? -std::numeric_limits<double>::infinity() : 0.0;
  const Tensor padded = pad(x, padding, fill);
  const std::int64_t out_h = (padded.size(2) - kernel.h) / stride.h + 1;
  const std::int64_t out_w = (padded.size(3) - kernel.w) / stride.w + 1;
  Tensor y;
  for (std::int64_t i = 0; i < kernel.h; ++i)
    for (std::int64_t j = 0; j < kernel.w; ++j) {
      const Tensor tap = padded.slice(2, i, i + (out_h - 1) * stride.h + 1, stride.h)
                             .slice(3, j, j + (out_w - 1) * stride.w + 1, stride.w);
      y = !y.defined() ? tap : is_max ? maximum(y, tap) : y + tap;
    }
  return is_max ? y : y / static_cast<double>(kernel.h * kernel.w);
}

struct PoolCase {
  Shape input;
  Size2d kernel, stride, padding;
};

const std::vector<PoolCase> cases = {
    {{2, 3, 8, 8}, 2, 2, 0},                 // the paper's 2x2, stride 2
    {{2, 2, 7, 6}, 3, 2, 1},                 // overlapping windows with padding
    {{1, 3, 6, 9}, {2, 3}, {1, 2}, {1, 1}},  // non-square everything
    {{2, 2, 5, 5}, 3, 1, 1},                 // stride 1: every pixel in up to 9 windows
};

}  // namespace

TEST_CASE("max_pool2d and avg_pool2d: gradients match finite differences in float64") {
  for (const PoolCase& c : cases) {
    CAPTURE(c.input);
    const Inputs inputs{leaf(c.input, 8)};
    CHECK_GRADIENTS(
        [c](const Inputs& in) { return max_pool2d(in[0], c.kernel, c.stride, c.padding); }, inputs);
    CHECK_GRADIENTS(
        [c](const Inputs& in) { return avg_pool2d(in[0], c.kernel, c.stride, c.padding); }, inputs);
  }
  CHECK_GRADIENTS([](const Inputs& in) { return global_avg_pool2d(in[0]); },
                  Inputs{leaf({2, 3, 4, 5}, 9)});
}

TEST_CASE("max_pool2d and avg_pool2d: values and gradients equal the composed twins") {
  for (const DType dtype : {DType::Float32, DType::Float64}) {
    const double tolerance = dtype == DType::Float32 ? 1e-6 : 1e-13;
    for (const PoolCase& c : cases)
      for (const bool is_max : {true, false}) {
        CAPTURE(dtype);
        CAPTURE(c.input);
        CAPTURE(is_max);
        Generator generator(31);
        const TensorOptions options{.dtype = dtype};
        const Tensor x0 = randn(c.input, generator, options);
        const auto run = [&](bool fused) {
          const Tensor x = x0.clone().requires_grad_();
          const Tensor y = !fused   ? pool_composed(x, c.kernel, c.stride, c.padding, is_max)
                           : is_max ? max_pool2d(x, c.kernel, c.stride, c.padding)
                                    : avg_pool2d(x, c.kernel, c.stride, c.padding);
          Generator dy_generator(32);
          (y * randn(y.shape(), dy_generator, options)).sum().backward();
          return std::vector<Tensor>{y.detach(), x.grad()};
        };
        const auto fused = run(true), composed = run(false);
        CHECK(all_close(fused[0], composed[0], tolerance, tolerance));
        CHECK(all_close(fused[1], composed[1], tolerance, tolerance));
      }
  }
}

TEST_CASE("max_pool2d: values, first maximum on ties, and gradients that add up") {
  const Tensor x =
      tensor({1, 5, 2, 0, 3, 4, 7, 7, 9, 1, 2, 2, 0, 8, 2, 6}, {.dtype = DType::Float64})
          .reshape({1, 1, 4, 4})
          .requires_grad_();
  const Tensor y = max_pool2d(x, 2);
  CHECK(y.shape() == Shape{1, 1, 2, 2});
  CHECK(all_close(y, {5, 7, 9, 6}));
  y.sum().backward();
  // The tie 7, 7 in the top-right window sends its gradient to the first 7 only.
  CHECK(all_close(x.grad(), {0, 1, 0, 0, 0, 0, 1, 0, 1, 0, 0, 0, 0, 0, 0, 1}));

  // One large pixel wins all nine overlapping windows, and its gradients add: 9.
  Tensor peak = zeros({1, 1, 3, 3}, {.dtype = DType::Float64});
  peak.detach().select(2, 1).select(2, 1).fill_(1);
  peak.requires_grad_();
  max_pool2d(peak, 3, 1, 1).sum().backward();
  CHECK(all_close(peak.grad(), {0, 0, 0, 0, 9, 0, 0, 0, 0}));

  // A window of -inf still sends its gradient to a pixel (its first), as PyTorch does; a NaN
  // wins its window.
  const double inf = std::numeric_limits<double>::infinity();
  Tensor low = tensor({-inf, -inf, -inf, -inf, 1, std::nan(""), 2, 3}, {.dtype = DType::Float64})
                   .reshape({1, 2, 2, 2})
                   .requires_grad_();
  const Tensor pooled = max_pool2d(low, 2);
  const std::vector<double> values = pooled.to_vector<double>();
  CHECK(values[0] == -inf);
  CHECK(std::isnan(values[1]));
  pooled.backward(ones({1, 2, 1, 1}, {.dtype = DType::Float64}));
  CHECK(all_close(low.grad(), {1, 0, 0, 0, 0, 1, 0, 0}));
}

TEST_CASE("max_pool2d: a window with several NaNs sends its gradient to the first") {
  const double nan = std::nan("");
  // One 2x2 window (the 2x2 fast path) and one 3x3 window (the general kernel), each with NaNs
  // at row-major positions 1 and 3, and a larger number after them.
  for (const std::int64_t k : {2, 3}) {
    std::vector<double> values(static_cast<std::size_t>(k * k), 0.0);
    values[1] = nan;
    values[3] = nan;
    values.back() = 100;
    Tensor x = from_vector(values, {1, 1, k, k}).requires_grad_();
    const Tensor y = max_pool2d(x, k);
    CHECK(std::isnan(y.item()));
    y.sum().backward();
    std::vector<double> expected(values.size(), 0.0);
    expected[1] = 1;
    CHECK(all_close(x.grad(), expected, 0, 0));
  }
}

// The 2x2, stride-2 pool without padding has a path of its own (max_pool_2x2_plane in
// backends/cpu/simd/max_pool_2x2.h). The general kernel computes the same windows on the input with
// one extra row above and column to the left and padding 1: its output (oh + 1, ow + 1) reads the
// block of (oh, ow). Both must agree bit for bit, ties (small integers) and NaNs included, at even
// and odd sizes, values and gradients.
TEST_CASE("max_pool2d: the 2x2 stride-2 path equals the general kernel") {
  const Shape shapes[] = {{2, 3, 8, 8}, {1, 2, 7, 9}, {2, 1, 2, 3}, {1, 1, 5, 2}, {1, 2, 3, 2}};
  for (const DType dtype : {DType::Float32, DType::Float64})
    for (const Shape& shape : shapes) {
      CAPTURE(dtype);
      CAPTURE(shape);
      Generator generator(61);
      const TensorOptions options{.dtype = dtype};
      Tensor x0 = randint(0, 3, shape, generator).to(dtype);
      // NaNs: a column of channel 0 (the second of its blocks) and the last row, which is in
      // no window when the height is odd.
      x0.select(1, 0).select(2, 1).fill_(std::nan(""));
      x0.select(2, shape[2] - 1).fill_(std::nan(""));
      const std::int64_t out_h = shape[2] / 2, out_w = shape[3] / 2;
      const Tensor dy = randn({shape[0], shape[1], out_h, out_w}, generator, options);

      const Tensor x = x0.clone().requires_grad_();
      const Tensor y = max_pool2d(x, 2);
      y.backward(dy);

      const Tensor x_general = x0.clone().requires_grad_();
      const Tensor shifted =
          cat({full({shape[0], shape[1], shape[2] + 1, 1}, 5.0, options),
               cat({full({shape[0], shape[1], 1, shape[3]}, 5.0, options), x_general}, 2)},
              3);
      const Tensor y_general = max_pool2d(shifted, 2, 2, 1).narrow(2, 1, out_h).narrow(3, 1, out_w);
      y_general.backward(dy);

      CHECK(y.shape() == y_general.shape());
      CHECK(all_close(y, y_general, 0, 0));
      CHECK(all_close(x.grad(), x_general.grad(), 0, 0));
    }
}

// 3x3 windows with stride 2 and padding 1 on a 4x4 plane give the shapes of a 2x2 pool, so
// backward tries the 2x2 path, but the windows overlap: one peak wins all four, its index lies
// in the block of output (0, 0) only, and its gradients must add up as in the general path.
TEST_CASE("max_pool2d: overlapping windows with a 2x2 pool's shapes add their gradients") {
  Tensor x = zeros({1, 1, 4, 4}, {.dtype = DType::Float64});
  x.select(2, 1).select(2, 1).fill_(1);
  x.requires_grad_();
  const Tensor y = max_pool2d(x, 3, 2, 1);
  REQUIRE(y.shape() == Shape{1, 1, 2, 2});
  y.backward(tensor({1, 2, 3, 4}, {.dtype = DType::Float64}).reshape({1, 1, 2, 2}));
  CHECK(all_close(x.grad(), {0, 0, 0, 0, 0, 10, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}));
}

TEST_CASE("max_pool2d and avg_pool2d: strided views as input and upstream gradient") {
  Generator generator(19);
  const TensorOptions options{.dtype = DType::Float64};
  const Tensor x_view = randn({2, 7, 6, 3}, generator, options).permute({0, 3, 1, 2});
  const Tensor dy_view = randn({2, 3, 3, 4}, generator, options).transpose(2, 3);  // [2, 3, 4, 3]
  REQUIRE_FALSE(x_view.is_contiguous());
  for (const bool is_max : {true, false}) {
    CAPTURE(is_max);
    std::vector<Tensor> results;
    for (const bool contiguous : {false, true}) {
      Tensor x = (contiguous ? x_view.contiguous() : x_view).detach().requires_grad_();
      const Tensor y = is_max ? max_pool2d(x, 3, 2, 1) : avg_pool2d(x, 3, 2, 1);
      y.backward(contiguous ? dy_view.contiguous() : dy_view);
      results.insert(results.end(), {y.detach(), x.grad()});
    }
    CHECK(all_close(results[0], results[2], 0, 0));
    CHECK(all_close(results[1], results[3], 0, 0));
  }
}

TEST_CASE("avg_pool2d: the padding counts as zeros") {
  const Tensor x = ones({1, 1, 2, 2}, {.dtype = DType::Float64});
  // Kernel 2, stride 2, padding 1: each window holds one pixel and three padding zeros.
  CHECK(all_close(avg_pool2d(x, 2, 2, 1), {0.25, 0.25, 0.25, 0.25}));
  // Kernel 3, stride 1, padding 1: each window holds all four pixels.
  CHECK(all_close(avg_pool2d(x, 3, 1, 1), {4.0 / 9, 4.0 / 9, 4.0 / 9, 4.0 / 9}));
}

// Every (sample, channel) plane is pooled, and its gradient summed, by one thread in a fixed
// order: the same bits for any thread count.
TEST_CASE("max_pool2d and avg_pool2d: 1 and 2 threads give identical results") {
  Generator generator(51);
  Tensor x = randn({8, 32, 24, 24}, generator).requires_grad_();
  const auto run = [&](int threads) {
    set_num_threads(threads);
    x.zero_grad();
    const Tensor y = max_pool2d(x, 3, 1, 1) + avg_pool2d(x, 3, 1, 1);
    (y.square().sum() + max_pool2d(x, 2).square().sum()).backward();
    return std::vector<Tensor>{y.detach(), x.grad()};
  };
  const int before = get_num_threads();
  const auto one = run(1), two = run(2);
  set_num_threads(before);
  CHECK(all_close(one[0], two[0], 0, 0));
  CHECK(all_close(one[1], two[1], 0, 0));
}

TEST_CASE("global_avg_pool2d and the pooling modules") {
  Generator generator(41);
  const Tensor x = randn({2, 3, 8, 8}, generator);
  CHECK(all_close(global_avg_pool2d(x), mean(x, {2, 3}), 1e-6, 1e-7));
  CHECK(nn::GlobalAvgPool2d().forward(x).shape() == Shape{2, 3});
  CHECK(nn::MaxPool2d(2).forward(x).shape() == Shape{2, 3, 4, 4});
  CHECK(all_close(nn::MaxPool2d(3, 2, 1).forward(x), max_pool2d(x, 3, 2, 1), 0, 0));
  CHECK(nn::AvgPool2d(Size2d{2, 4}).forward(x).shape() == Shape{2, 3, 4, 2});
  CHECK(all_close(nn::AvgPool2d(2, 1).forward(x), avg_pool2d(x, 2, 1), 0, 0));
  CHECK(nn::Flatten().forward(x).shape() == Shape{2, 192});
  CHECK(nn::Flatten(0, 1).forward(x).shape() == Shape{6, 8, 8});
  CHECK(nn::MaxPool2d(2).parameters().empty());
}

TEST_CASE("pooling: errors name the op and the arguments") {
  const Tensor x = randn({2, 3, 5, 5});
  CHECK_ERROR(max_pool2d(randn({3, 5, 5}), 2), "max_pool2d", "[N, C, H, W]", "[3, 5, 5]");
  CHECK_ERROR(avg_pool2d(randn({5, 5}), 2), "avg_pool2d", "[N, C, H, W]", "[5, 5]");
  CHECK_ERROR(max_pool2d(x, 2, 0), "max_pool2d", "stride must be positive");
  CHECK_ERROR(avg_pool2d(x, 2, Size2d{1, -2}), "avg_pool2d", "stride must be positive", "[1, -2]");
  CHECK_ERROR(max_pool2d(x, 2, 2, 2), "max_pool2d", "at most half the kernel");
  CHECK_ERROR(avg_pool2d(x, 0), "avg_pool2d", "kernel size must be positive");
  CHECK_ERROR(max_pool2d(x, 6), "max_pool2d", "larger than the padded input", "[2, 3, 5, 5]");
  CHECK_ERROR(max_pool2d(x.to(DType::Int64), 2), "max_pool2d", "floating");
  CHECK_ERROR(global_avg_pool2d(randn({2, 3})), "global_avg_pool2d", "[N, C, H, W]");
}

// ---- on a GPU: CPU against CUDA ----------------------------------------------------------------

// The CUDA kernels against the CPU's, values and gradients: max pooling selects, so it is
// exact; average pooling adds kh kw values, and its backward adds the windows' shares
// (testing::summed).

using testing::exact;
using testing::normal;
using testing::parity_mismatch;
using testing::summed;

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

// ---- bfloat16 ----------------------------------------------------------------------------------

// bfloat16 operands give, bit for bit, the float32 kernels' results on the same values, rounded
// once, on the CPU and on a GPU where there is one; the GPU's kernels make no float32 copies.

using namespace testing::twins;
using testing::bits_mismatch;

TEST_CASE("bfloat16 kernels: max and average pooling are the float32 kernels, rounded once") {
  for (const Device device : devices_present()) {
    CAPTURE(device);
    Generator generator(49);
    backend::Backend& kernels = backend::backend_for(device);
    {
      INFO("max and average pooling, 3 x 3 windows at stride 2: pixels in several windows");
      const backend::Window2d window{.kernel_h = 3,
                                     .kernel_w = 3,
                                     .stride_h = 2,
                                     .stride_w = 2,
                                     .padding_h = 1,
                                     .padding_w = 1};
      const Twin x = input_twin(device, {3, 5, 13, 13}, generator);
      const Twin dy = input_twin(device, {3, 5, 7, 7}, generator);
      const Twin maxima = output_twin(device, {3, 5, 7, 7}),
                 means = output_twin(device, {3, 5, 7, 7});
      const Twin max_dx = output_twin(device, {3, 5, 13, 13}),
                 mean_dx = output_twin(device, {3, 5, 13, 13});
      Tensor indices[2];
      for (const bool narrow : {true, false}) {
        Tensor& where = indices[narrow ? 0 : 1];
        where = empty({3, 5, 7, 7}, {.dtype = DType::Int64, .device = device});
        kernels.max_pool2d(maxima.ref(narrow), detail::ref(where), x.ref(narrow), window);
        kernels.max_pool2d_backward(max_dx.ref(narrow), dy.ref(narrow), detail::ref(where));
        kernels.avg_pool2d(means.ref(narrow), x.ref(narrow), window);
        kernels.avg_pool2d_backward(mean_dx.ref(narrow), dy.ref(narrow), window);
      }
      CHECK_NO_MISMATCH(twin_mismatch(maxima, "max_pool2d"));
      CHECK_NO_MISMATCH(bits_mismatch(indices[0], indices[1], "max_pool2d's indices"));
      CHECK_NO_MISMATCH(twin_mismatch(max_dx, "max_pool2d_backward"));
      CHECK_NO_MISMATCH(twin_mismatch(means, "avg_pool2d"));
      CHECK_NO_MISMATCH(twin_mismatch(mean_dx, "avg_pool2d_backward"));
    }
  }
}

TEST_CASE_FIXTURE(GpuScratch, "bfloat16 kernels: pooling copies nothing") {
  SKIP_WITHOUT_CUDA();  // the CPU computes bfloat16 on float32 copies by design
  // Images of 12 MiB in bfloat16 (24 MiB as float32). Max pooling's backward sums into a
  // float32 image (24 MiB), where copies would add those of dy too (30 MiB).
  const Tensor x = input({64, 96, 32, 32}), dy = input({64, 96, 16, 16});
  const backend::Window2d window{
      .kernel_h = 3, .kernel_w = 3, .stride_h = 2, .stride_w = 2, .padding_h = 1, .padding_w = 1};
  const Tensor pooled = output({64, 96, 16, 16}), dx = output({64, 96, 32, 32});
  const Tensor indices = output({64, 96, 16, 16}, DType::Int64);
  check_scratch("pooling forward and average pooling's backward", 0, [&] {
    kernels.max_pool2d(r(pooled), r(indices), r(x), window);
    kernels.avg_pool2d(r(pooled), r(x), window);
    kernels.avg_pool2d_backward(r(dx), r(dy), window);
  });
  check_scratch("max pooling's backward", allocator_block(x.numel() * float32_bytes),
                [&] { kernels.max_pool2d_backward(r(dx), r(dy), r(indices)); });
}
