// The softmax family (softmax and log_softmax along one dim) on each floor, each section below:
//   - the op (autograd/functions/softmax.cpp): stable for large inputs, rows summing to one,
//     errors, and float64 gradient checks along any dim;
//   - the CPU kernels (backends/cpu/softmax.cpp), called directly through TensorRefs over
//     std::vector buffers: forward and backward along every dim against a naive loop in double;
//     float32 rows of odd lengths with huge and -inf entries against double, and the same bits
//     for any thread count;
//   - on a GPU, the CUDA kernels (backends/cuda/softmax.cu) against the CPU's, values and
//     gradients, along the last dim and along others;
//   - bfloat16: each backend's kernels are, bit for bit, the float32 ones on the same values,
//     rounded once, forward and backward.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "base/error.h"
#include "bfloat16_twins.h"
#include "core/tensor_internal.h"
#include "cpu_kernel_buffers.h"
#include "cuda_parity.h"
#include "helpers.h"

using namespace normgrad;
using testing::all_close;
using testing::leaf;
using Inputs = std::vector<Tensor>;

TEST_CASE("softmax is stable for large inputs and sums to one") {
  const Tensor x = tensor({{1000, 1001, 1002}, {-1000, 0, 1000}});
  const Tensor y = softmax(x, 1);
  const double e1 = std::exp(-1.0), e2 = std::exp(-2.0);
  CHECK(
      all_close(y.select(0, 0), {e2 / (1 + e1 + e2), e1 / (1 + e1 + e2), 1 / (1 + e1 + e2)}, 1e-6));
  CHECK(all_close(y.sum({1}), {1, 1}, 1e-6));
  const Tensor ly = log_softmax(x, 1);
  CHECK(std::isfinite(ly.select(0, 1).select(0, 0).item()));
  CHECK(all_close(ly.select(0, 0),
                  {-2 - std::log(1 + e1 + e2), -1 - std::log(1 + e1 + e2), -std::log(1 + e1 + e2)},
                  1e-6));
  CHECK(all_close(softmax(x, 0).sum({0}), {1, 1, 1}, 1e-6));
  CHECK_ERROR(softmax(zeros({2}, {.dtype = DType::Int64}), 0), "softmax", "int64");
  CHECK_ERROR(softmax(zeros({2, 3}), 2), "softmax", "dim 2");
}

TEST_CASE("gradcheck: softmax and log_softmax along any dim") {
  const Tensor a = leaf({3, 5}, 7, 2.0);
  CHECK_GRADIENTS([](const Inputs& x) { return softmax(x[0], 1); }, {a});
  CHECK_GRADIENTS([](const Inputs& x) { return softmax(x[0], 0); }, {a});
  CHECK_GRADIENTS([](const Inputs& x) { return log_softmax(x[0], -1); }, {a});
  CHECK_GRADIENTS([](const Inputs& x) { return log_softmax(x[0].t(), 1); }, {a});
}

// ---- the CPU kernels ---------------------------------------------------------------------------

using namespace testing::cpu_kernels;

TEST_CASE("cpu softmax and log_softmax along every dim, forward and backward") {
  const Shape shape{3, 4, 5};
  std::vector<double> x = sample_values<double>(60, 11);
  for (double& v : x) v = v * 10 + 1000;  // large values: the max must be subtracted
  std::vector<double> dy = sample_values<double>(60, 12);
  const Strides strides = contiguous_strides(shape);
  for (int dim = 0; dim < 3; ++dim)
    for (bool log : {false, true}) {
      std::vector<double> y(60), dx(60);
      cpu().softmax(view(y, shape), view(x, shape), dim, log);
      cpu().softmax_backward(view(dx, shape), view(dy, shape), view(y, shape), dim, log);
      // Naive: for every line along dim.
      for (std::int64_t line = 0; line < 60; ++line) {
        std::int64_t rest = line, start = 0;
        bool is_line_start = true;
        for (int d = 2; d >= 0; --d) {
          const std::int64_t index = rest % shape[d];
          rest /= shape[d];
          if (d == dim && index != 0) is_line_start = false;
          start += index * strides[d];
        }
        if (!is_line_start) continue;
        double max_value = -1e300, sum = 0, dot = 0, dy_sum = 0;
        for (std::int64_t i = 0; i < shape[dim]; ++i)
          max_value = std::max(max_value, x[start + i * strides[dim]]);
        for (std::int64_t i = 0; i < shape[dim]; ++i)
          sum += std::exp(x[start + i * strides[dim]] - max_value);
        for (std::int64_t i = 0; i < shape[dim]; ++i) {
          const std::int64_t at = start + i * strides[dim];
          const double p = std::exp(x[at] - max_value) / sum;
          dot += dy[at] * p;
          dy_sum += dy[at];
          CHECK(y[at] == doctest::Approx(log ? std::log(p) : p).epsilon(1e-12));
        }
        for (std::int64_t i = 0; i < shape[dim]; ++i) {
          const std::int64_t at = start + i * strides[dim];
          const double p = std::exp(x[at] - max_value) / sum;
          CHECK(dx[at] ==
                doctest::Approx(log ? dy[at] - p * dy_sum : p * (dy[at] - dot)).epsilon(1e-10));
        }
      }
    }
  // A transposed float32 input: the softmax of each column of a 2x3 buffer.
  std::vector<float> x32{1, 2, 3, 1, 2, 5}, y32(6);
  cpu().softmax(view(y32, {3, 2}), view(x32, {3, 2}, {1, 3}), 1, false);
  CHECK(y32[0] == doctest::Approx(0.5));
  CHECK(y32[5] == doctest::Approx(1 / (1 + std::exp(-2.0))));  // the line (3, 5)
  std::vector<float> scalar{3}, scalar_out{0};
  cpu().softmax(view(scalar_out, {}), view(scalar, {}), 0, true);
  CHECK(scalar_out[0] == 0.0f);
  std::vector<std::int64_t> integers(3);
  CHECK_THROWS_AS(cpu().softmax(view(integers, {3}), view(integers, {3}), 0, false),
                  normgrad::Error);
}

TEST_CASE("cpu float32 softmax rows of odd lengths, huge and -inf entries, against double") {
  const double eps = std::ldexp(1.0, -24);
  for (std::int64_t n : {1, 7, 33, 1000, 4097}) {
    const std::int64_t rows = 5;
    std::vector<float> x = sample_values<float>(rows * n, 41);
    for (float& v : x) v *= 20;
    // Row 1 holds +-1000, row 2 is -inf but for one entry, row 3 is large and close together.
    x[n] = 1000;
    x[n + n / 2] = -1000;
    for (std::int64_t k = 0; k < n; ++k) x[2 * n + k] = -std::numeric_limits<float>::infinity();
    x[2 * n + n / 3] = 3;
    for (std::int64_t k = 0; k < n; ++k) x[3 * n + k] = 1000 + x[3 * n + k] / 64;
    std::vector<float> dy = sample_values<float>(rows * n, 42);
    for (bool log : {false, true}) {
      std::vector<float> y(rows * n), dx(rows * n);
      cpu().softmax(view(y, {rows, n}), view(x, {rows, n}), 1, log);
      cpu().softmax_backward(view(dx, {rows, n}), view(dy, {rows, n}), view(y, {rows, n}), 1, log);
      bool forward_ok = true, backward_ok = true;
      for (std::int64_t r = 0; r < rows; ++r) {
        double max_value = -HUGE_VAL, sum = 0, dy_sum = 0, dy_abs = 0, dot = 0;
        for (std::int64_t k = 0; k < n; ++k) max_value = std::max(max_value, double(x[r * n + k]));
        for (std::int64_t k = 0; k < n; ++k) {
          sum += std::exp(x[r * n + k] - max_value);
          dy_sum += dy[r * n + k];
          dy_abs += std::fabs(dy[r * n + k]);
        }
        const double log_sum = std::log(sum);
        for (std::int64_t k = 0; k < n; ++k) {
          const std::int64_t at = r * n + k;
          const double d = x[at] - max_value, p = std::exp(d) / sum;
          dot += dy[at] * p;
          if (std::isinf(d)) {
            forward_ok = forward_ok && y[at] == (log ? -HUGE_VALF : 0.0f);
          } else if (log) {
            forward_ok = forward_ok && std::fabs(y[at] - (d - log_sum)) <=
                                           2 * eps * (std::fabs(d) + std::fabs(log_sum) + 2);
          } else {
            // exp and the sum to 1.02 ulp each, 1/sum and the product to 1/2 ulp, and x - m
            // to half an ulp of itself, which moves exp(d) by |d| eps.
            forward_ok = forward_ok && std::fabs(y[at] - p) <=
                                           p * eps * (std::fabs(d) + 8) + std::ldexp(1.0, -147);
          }
        }
        for (std::int64_t k = 0; k < n; ++k) {
          const std::int64_t at = r * n + k;
          const double d = x[at] - max_value, p = std::exp(d) / sum;
          const double expected = log ? dy[at] - p * dy_sum : p * (dy[at] - dot);
          const double scale = log ? std::fabs(dy[at]) + p * dy_abs
                                   : p * (std::fabs(dy[at]) + dy_abs) + std::ldexp(1.0, -140);
          backward_ok = backward_ok && std::fabs(dx[at] - expected) <= 64 * eps * scale;
        }
      }
      INFO("n = ", n, log ? ", log_softmax" : ", softmax");
      CHECK(forward_ok);
      CHECK(backward_ok);
      CHECK(y[2 * n + n / 3] == (log ? 0.0f : 1.0f));  // the one finite entry of row 2
    }
  }
  // Rows go whole to one thread: the same bits for any thread count.
  std::vector<float> x = sample_values<float>(64 * 1000, 43);
  std::vector<float> one(x.size()), two(x.size());
  with_threads(1, [&] { cpu().softmax(view(one, {64, 1000}), view(x, {64, 1000}), 1, false); });
  with_threads(2, [&] { cpu().softmax(view(two, {64, 1000}), view(x, {64, 1000}), 1, false); });
  CHECK(one == two);
}

// ---- on a GPU: CPU against CUDA ----------------------------------------------------------------

using testing::parity_mismatch;
using testing::summed;
using testing::Tolerance;

TEST_CASE("cuda parity: softmax and log_softmax along the last dim and along others") {
  SKIP_PARITY_WITHOUT_CUDA();
  for (const DType dtype : {DType::Float32, DType::Float64}) {
    const bool f64 = dtype == DType::Float64;
    // softmax values lie in (0, 1]: a few ulps of exp plus the relative error of the row sum.
    const Tolerance softmax_values = f64 ? Tolerance{1e-12, 1e-14} : Tolerance{1e-5, 1e-7};
    // log_softmax = x - max - log(sum): an absolute error of a few ulps of |x - max| <= 30.
    const Tolerance log_values = f64 ? Tolerance{1e-12, 1e-13} : Tolerance{1e-5, 1e-5};
    // softmax backward, y (dy - s) with s = sum(dy y) a weighted mean of dy: the error of s is
    // a few ulps of max|dy|, and y <= 1 scales it.
    const Tolerance softmax_gradients = f64 ? Tolerance{1e-12, 1e-13} : Tolerance{1e-5, 1e-5};
    for (const Shape& shape : {Shape{4, 6, 7}, Shape{3, 5, 1000}, Shape{2, 1000, 3}}) {
      const Tensor x = testing::normal(shape, 8, dtype, 3.0);
      for (const std::int64_t dim : {-1, 0, 1}) {
        INFO(dtype << ", shape " << shape << ", dim " << dim);
        const std::int64_t n = *std::max_element(shape.begin(), shape.end());  // bounds any row
        // log_softmax backward, dy - exp(y) sum(dy): a plain sum of n upstream values.
        const Tolerance log_gradients = summed(dtype, static_cast<double>(n), 1.0);
        CHECK_NO_MISMATCH(parity_mismatch([dim](const Inputs& in) { return softmax(in[0], dim); },
                                          {x}, softmax_values, softmax_gradients));
        CHECK_NO_MISMATCH(
            parity_mismatch([dim](const Inputs& in) { return log_softmax(in[0], dim); }, {x},
                            log_values, log_gradients));
        // A transposed input: the softmax dim is strided.
        CHECK_NO_MISMATCH(
            parity_mismatch([dim](const Inputs& in) { return in[0].transpose(0, 2).softmax(dim); },
                            {x}, softmax_values, softmax_gradients));
        CHECK_NO_MISMATCH(parity_mismatch(
            [dim](const Inputs& in) { return in[0].transpose(1, 2).log_softmax(dim); }, {x},
            log_values, log_gradients));
      }
    }
    // One long row of 65536 values.
    INFO(dtype << ", one row of 2^16");
    const Tensor row = testing::normal({2, 1 << 16}, 9, dtype, 3.0);
    CHECK_NO_MISMATCH(parity_mismatch([](const Inputs& in) { return softmax(in[0], 1); }, {row},
                                      softmax_values, softmax_gradients));
    CHECK_NO_MISMATCH(parity_mismatch([](const Inputs& in) { return log_softmax(in[0], 1); }, {row},
                                      log_values, summed(dtype, 1 << 16)));
  }
}

// ---- bfloat16 ----------------------------------------------------------------------------------

// The CPU computes bfloat16 on float32 working copies of its operands, CUDA natively in float32
// (see test_elementwise.cpp's bfloat16 section): on both, the float32 kernel's result on the
// same values, laid out as the kernel reads them, rounded once.

using testing::bits_mismatch;
using namespace testing::twins;

namespace {

Tensor softmax_backward(const Tensor& dy, const Tensor& y, int dim, bool log) {
  Tensor dx = empty_like_dtype(dy, dy.dtype());
  backend_of(dy).softmax_backward(detail::ref(dx), detail::ref(dy), detail::ref(y), dim, log);
  return dx;
}

}  // namespace

TEST_CASE(
    "bfloat16 kernels: softmax and log-softmax, forward and backward, are the float32 "
    "ones") {
  for (const Device device : devices_present()) {
    CAPTURE(device);
    Generator generator(44);
    struct Case {
      Shape shape;
      int dim;
      bool every_other = false;  // x and dy are every other column of wider tensors
    };
    // The warp kernels (contiguous lines up to 1024), the block kernels (longer lines), and lines
    // across memory: a warp per line for few, a thread per line for many adjacent ones. On the
    // CPU: strided lines (every other column), which take other code than contiguous ones, and
    // columns too many to widen at once (600 x 300 over dim 0), split over threads.
    const std::vector<Case> cases = {
        {{50, 37}, 1},        {{9, 1000}, 1},       {{6, 3000}, 1},
        {{20, 100}, 0},       {{20, 1100}, 0},      {{50, 37}, 1, true},
        {{9, 1000}, 1, true}, {{20, 100}, 0, true}, {{600, 300}, 0}};
    for (const Case& c : cases) {
      for (const bool log : {false, true}) {
        CAPTURE(c.shape);
        CAPTURE(c.dim);
        CAPTURE(c.every_other);
        CAPTURE(log);
        const auto draw = [&](double scale) {
          const Shape wide = {c.shape[0], (c.every_other ? 2 : 1) * c.shape[1]};
          return to_bfloat16(randn(wide, generator) * scale).to(device);
        };
        const View view = [&c](const Tensor& t) {
          return c.every_other ? t.slice(1, 0, t.size(1), 2) : t;
        };
        const Operand x = view_of(draw(2.0), view);
        const Tensor y = log ? log_softmax(x.stored, c.dim) : softmax(x.stored, c.dim);
        const Tensor y_wide = log ? log_softmax(x.widened, c.dim) : softmax(x.widened, c.dim);
        CHECK_NO_MISMATCH(bits_mismatch(y, to_bfloat16(y_wide)));
        // Backward from the rounded forward output, as a bfloat16 graph runs it.
        const Operand dy = view_of(draw(1.0), view);
        const Tensor dx = softmax_backward(dy.stored, y, c.dim, log);
        const Tensor dx_wide = softmax_backward(dy.widened, to_float32(y), c.dim, log);
        CHECK_NO_MISMATCH(bits_mismatch(dx, to_bfloat16(dx_wide)));
      }
    }
  }
}
