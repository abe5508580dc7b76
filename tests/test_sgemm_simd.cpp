// normgrad's float32 GEMMs (backends/cpu/gemm/sgemm_packed.h, with the AVX-512 and the AVX2
// micro-kernels) against a float64 product computed here term by term: every operand layout,
// edge tiles, several blocks along each dimension, an A too large to pack whole, accumulation,
// C inside a larger matrix, and the same bits on 1 and 2 threads. Then their convolution
// (sgemm_conv.h), whose B is packed from the image, against float64 sums of the taps. Each
// kernel is skipped, with a message, on CPUs without its instructions.

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "backends/cpu/gemm/sgemm_avx2.h"
#include "backends/cpu/gemm/sgemm_avx512.h"
#include "core/threads.h"

using normgrad::backend::cpu::StridedMatrix;

namespace {

// The GEMMs this CPU has, and a message for each it lacks.
std::vector<const normgrad::backend::cpu::SimdGemm*> gemms_here() {
  std::vector<const normgrad::backend::cpu::SimdGemm*> here;
  for (const auto& [name, gemm] : {std::pair{"AVX-512", normgrad::backend::cpu::avx512_gemm()},
                                   std::pair{"AVX2", normgrad::backend::cpu::avx2_gemm()}}) {
    if (gemm != nullptr) {
      here.push_back(gemm);
    } else {
      const std::string note = std::string("this CPU lacks the instructions of the ") + name +
                               " GEMM (or the environment turned it off): not tested";
      MESSAGE(note);
    }
  }
  return here;
}

struct Product {
  std::int64_t m, n, k;
  bool transpose_a, transpose_b, accumulate;
};

std::vector<float> random_values(std::size_t count, std::mt19937& generator) {
  std::normal_distribution<float> normal;
  std::vector<float> values(count);
  for (float& value : values) value = normal(generator);
  return values;
}

// Runs one product into a C of n + 5 columns (ldc), so that the 5 columns beside it show
// any write past the edge; returns that whole buffer.
std::vector<float> run(const normgrad::backend::cpu::SimdGemm& simd, const Product& p,
                       const std::vector<float>& a, const std::vector<float>& b,
                       const std::vector<float>& c0) {
  const std::int64_t ldc = p.n + 5;
  std::vector<float> c = c0;
  const StridedMatrix a_matrix =
      p.transpose_a ? StridedMatrix{a.data(), 1, p.m} : StridedMatrix{a.data(), p.k, 1};
  const StridedMatrix b_matrix =
      p.transpose_b ? StridedMatrix{b.data(), 1, p.k} : StridedMatrix{b.data(), p.n, 1};
  simd.gemm(p.m, p.n, p.k, a_matrix, b_matrix, c.data(), ldc, p.accumulate);
  return c;
}

}  // namespace

TEST_CASE("cpu GEMM: layouts, edges and blocks against a float64 product") {
  // Tiles are 12 x 32 (AVX-512) and 6 x 16 (AVX2); blocks 240 or 144 rows, 256 terms, 2048
  // columns; A is packed whole up to 4 Mi values.
  const Product products[] = {
      {12, 32, 16, false, false, false},     // one tile
      {37, 45, 300, false, false, true},     // edge tiles both ways, two blocks of terms
      {250, 70, 513, true, false, false},    // two row blocks, three blocks of terms
      {13, 2100, 40, false, true, true},     // two column panels
      {96, 864, 600, false, true, false},    // conv2d's dW: B transposed
      {300, 33, 96, true, true, true},       // few columns: threads split the rows
      {7, 17, 600000, false, false, true},   // A of 4.2 Mi values: packed a block at a time
      {2100, 20, 2050, true, false, false},  // likewise, transposed, several blocks each way
  };
  for (const normgrad::backend::cpu::SimdGemm* simd : gemms_here()) {
    CAPTURE(simd->name);
    std::mt19937 generator(71);
    for (const Product& p : products) {
      CAPTURE(p.m);
      CAPTURE(p.n);
      CAPTURE(p.k);
      CAPTURE(p.transpose_a);
      CAPTURE(p.transpose_b);
      CAPTURE(p.accumulate);
      const std::int64_t ldc = p.n + 5;
      const std::vector<float> a = random_values(p.m * p.k, generator);
      const std::vector<float> b = random_values(p.k * p.n, generator);
      const std::vector<float> c0 = random_values(p.m * ldc, generator);
      const std::vector<float> c = run(*simd, p, a, b, c0);
      bool close = true, untouched = true;
      for (std::int64_t i = 0; i < p.m; ++i) {
        for (std::int64_t j = 0; j < p.n; ++j) {
          double sum = p.accumulate ? c0[i * ldc + j] : 0.0, magnitude = std::fabs(sum);
          for (std::int64_t q = 0; q < p.k; ++q) {
            const double term = static_cast<double>(a[p.transpose_a ? q * p.m + i : i * p.k + q]) *
                                b[p.transpose_b ? j * p.k + q : q * p.n + j];
            sum += term;
            magnitude += std::fabs(term);
          }
          // Float32 sums of k terms: a few units of 2^-24 of the terms' magnitudes.
          close = close && std::fabs(c[i * ldc + j] - sum) <= 1e-5 * magnitude + 1e-6;
        }
        for (std::int64_t j = p.n; j < ldc; ++j)
          untouched = untouched && c[i * ldc + j] == c0[i * ldc + j];
      }
      CHECK(close);
      CHECK(untouched);
    }
  }
}

// Every element is summed by one thread in the same order however the threads split C.
TEST_CASE("cpu GEMM: 1 and 2 threads give the same bits") {
  const int before = normgrad::get_num_threads();
  for (const normgrad::backend::cpu::SimdGemm* simd : gemms_here()) {
    CAPTURE(simd->name);
    std::mt19937 generator(72);
    for (const Product& p : {Product{100, 700, 520, false, false, false},     // split by columns
                             Product{500, 40, 300, true, false, true},        // split by rows
                             Product{60, 90, 80000, false, false, false}}) {  // A packed by blocks
      const std::vector<float> a = random_values(p.m * p.k, generator);
      const std::vector<float> b = random_values(p.k * p.n, generator);
      const std::vector<float> c0 = random_values(p.m * (p.n + 5), generator);
      normgrad::set_num_threads(1);
      const std::vector<float> one = run(*simd, p, a, b, c0);
      normgrad::set_num_threads(2);
      const std::vector<float> two = run(*simd, p, a, b, c0);
      CHECK(one == two);
    }
  }
  normgrad::set_num_threads(before);
}

namespace {

// A convolution for the GEMMs' conv (sgemm_conv.h): x [batch, C, H, W], weight [O, C, kh, kw].
struct Conv {
  std::int64_t batch, channels, height, width, out_channels;
  normgrad::backend::Window2d window;
  bool bias;
  std::int64_t out_h() const {
    const auto& w = window;
    return (height + 2 * w.padding_h - w.dilation_h * (w.kernel_h - 1) - 1) / w.stride_h + 1;
  }
  std::int64_t out_w() const {
    const auto& w = window;
    return (width + 2 * w.padding_w - w.dilation_w * (w.kernel_w - 1) - 1) / w.stride_w + 1;
  }
  std::int64_t taps() const { return channels * window.kernel_h * window.kernel_w; }
  std::int64_t outputs() const { return out_h() * out_w(); }
  // Element (t, l) of sample n's im2col columns: the pixel that tap t sees at output l, or 0.
  double column(const std::vector<float>& x, std::int64_t n, std::int64_t t, std::int64_t l) const {
    const auto& w = window;
    const std::int64_t c = t / (w.kernel_h * w.kernel_w), i = t / w.kernel_w % w.kernel_h,
                       j = t % w.kernel_w;
    const std::int64_t h = l / out_w() * w.stride_h + i * w.dilation_h - w.padding_h;
    const std::int64_t v = l % out_w() * w.stride_w + j * w.dilation_w - w.padding_w;
    if (h < 0 || h >= height || v < 0 || v >= width) return 0.0;
    return x[((n * channels + c) * height + h) * width + v];
  }
};

normgrad::backend::Window2d window(std::int64_t kernel, std::int64_t stride, std::int64_t padding,
                                   std::int64_t dilation) {
  return {kernel, kernel, stride, stride, padding, padding, dilation, dilation};
}

const Conv convs[] = {
    {3, 5, 32, 32, 7, window(3, 1, 1, 1), true},     // rows of 32 outputs, one sliver or two
    {2, 40, 16, 16, 20, window(3, 1, 1, 1), false},  // 360 taps: two blocks of terms
    {4, 6, 8, 8, 13, window(3, 1, 0, 1), true},      // 6 x 6 outputs: slivers span rows
    {2, 9, 6, 6, 11, window(1, 1, 0, 1), false},     // 1x1: the columns are the image
    {1, 4, 19, 21, 250, window(3, 1, 2, 2), true},   // dilation; rows of 21; 250 output rows
    {2, 3, 17, 15, 5, window(3, 2, 1, 1), true},     // stride 2
    {1, 2, 3, 40, 6, window(5, 1, 3, 1), false},     // taps wholly in the padding
    {1, 900, 4, 4, 520, window(3, 1, 1, 1), false},  // A of 4.2 Mi values, packed by blocks
    {5, 3, 2, 2, 4, window(2, 1, 0, 1), true},       // a single output
    {3, 2, 5, 5, 3, window(1, 1, 1, 1), false},      // 1x1 with padding
};

// Operands of one convolution, drawn at random; y0 and dw0 (what the outputs held before)
// have 7 values past their ends, which show any write past them.
struct Operands {
  std::vector<float> x, weight, bias, y0, dy, dw0;
  Operands(const Conv& p, std::mt19937& generator)
      : x(random_values(p.batch * p.channels * p.height * p.width, generator)),
        weight(random_values(p.out_channels * p.taps(), generator)),
        bias(random_values(p.out_channels, generator)),
        y0(random_values(p.batch * p.out_channels * p.outputs() + 7, generator)),
        dy(random_values(p.batch * p.out_channels * p.outputs(), generator)),
        dw0(random_values(p.out_channels * p.taps() + 7, generator)) {}
};

std::vector<float> convolve(const normgrad::backend::cpu::SimdGemm& simd, const Conv& p,
                            const Operands& in) {
  std::vector<float> y = in.y0;
  simd.conv({in.x.data(), p.batch, p.channels, p.height, p.width, in.weight.data(),
             p.bias ? in.bias.data() : nullptr, p.out_channels, y.data(), p.out_h(), p.out_w(),
             p.window});
  return y;
}

std::vector<float> weight_gradient(const normgrad::backend::cpu::SimdGemm& simd, const Conv& p,
                                   const Operands& in) {
  std::vector<float> dw = in.dw0;
  simd.conv_weight_gradient({in.x.data(), p.batch, p.channels, p.height, p.width, in.dy.data(),
                             p.out_channels, p.out_h(), p.out_w(), dw.data(), p.window});
  return dw;
}

// Whether `got` is within float32 rounding of a float64 sum whose terms' magnitudes add up to
// `magnitude`.
bool near(float got, double sum, double magnitude) {
  return std::fabs(got - sum) <= 1e-5 * magnitude + 1e-6;
}

}  // namespace

// y = W X[n] (+ bias) and dW = sum over n of dY[n] X[n]^T.
TEST_CASE("cpu GEMM convolution and weight gradient: strides, padding, dilation and edges") {
  for (const normgrad::backend::cpu::SimdGemm* simd : gemms_here()) {
    CAPTURE(simd->name);
    std::mt19937 generator(73);
    for (const Conv& p : convs) {
      CAPTURE(p.channels);
      CAPTURE(p.height);
      CAPTURE(p.width);
      CAPTURE(p.out_channels);
      CAPTURE(p.window.kernel_h);
      const Operands in(p, generator);
      const std::vector<float> y = convolve(*simd, p, in), dw = weight_gradient(*simd, p, in);
      bool y_close = true, dw_close = true;
      for (std::int64_t n = 0; n < p.batch; ++n)
        for (std::int64_t o = 0; o < p.out_channels; ++o)
          for (std::int64_t l = 0; l < p.outputs(); ++l) {
            double sum = p.bias ? in.bias[o] : 0.0, magnitude = std::fabs(sum);
            for (std::int64_t t = 0; t < p.taps(); ++t) {
              const double term = in.weight[o * p.taps() + t] * p.column(in.x, n, t, l);
              sum += term;
              magnitude += std::fabs(term);
            }
            y_close =
                y_close && near(y[(n * p.out_channels + o) * p.outputs() + l], sum, magnitude);
          }
      for (std::int64_t o = 0; o < p.out_channels; ++o)
        for (std::int64_t t = 0; t < p.taps(); ++t) {
          double sum = 0.0, magnitude = 0.0;
          for (std::int64_t n = 0; n < p.batch; ++n)
            for (std::int64_t l = 0; l < p.outputs(); ++l) {
              const double term =
                  in.dy[(n * p.out_channels + o) * p.outputs() + l] * p.column(in.x, n, t, l);
              sum += term;
              magnitude += std::fabs(term);
            }
          dw_close = dw_close && near(dw[o * p.taps() + t], sum, magnitude);
        }
      CHECK(y_close);
      CHECK(dw_close);
      const std::int64_t y_end = p.batch * p.out_channels * p.outputs();
      CHECK(std::equal(y.begin() + y_end, y.end(), in.y0.begin() + y_end));
      const std::int64_t dw_end = p.out_channels * p.taps();
      CHECK(std::equal(dw.begin() + dw_end, dw.end(), in.dw0.begin() + dw_end));
    }
  }
}

// Each output is summed by one thread in one order, whatever the threads' share of the work.
TEST_CASE("cpu GEMM convolution: 1 and 2 threads give the same bits") {
  const int before = normgrad::get_num_threads();
  for (const normgrad::backend::cpu::SimdGemm* simd : gemms_here()) {
    CAPTURE(simd->name);
    std::mt19937 generator(74);
    for (const Conv& p : {Conv{5, 16, 32, 32, 24, window(3, 1, 1, 1), true},      // by samples
                          Conv{1, 16, 32, 32, 24, window(3, 1, 1, 1), false}}) {  // split
      const Operands in(p, generator);
      normgrad::set_num_threads(1);
      const std::vector<float> y1 = convolve(*simd, p, in), dw1 = weight_gradient(*simd, p, in);
      normgrad::set_num_threads(2);
      const std::vector<float> y2 = convolve(*simd, p, in), dw2 = weight_gradient(*simd, p, in);
      CHECK(y1 == y2);
      CHECK(dw1 == dw2);
    }
  }
  normgrad::set_num_threads(before);
}
