// The CPU backend's kernels, called directly through TensorRefs over std::vector buffers:
// every op family against hand-computed values or a naive loop, on contiguous, transposed,
// broadcast (stride 0), sliced, rank-0 and empty layouts; determinism across thread counts;
// summation accuracy; Philox known answers and moments; gemm in every transpose combination.

#include <doctest/doctest.h>
#include <omp.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <numeric>
#include <vector>

#include "backends/cpu/simd/philox_avx2.h"
#include "backends/cpu/simd/vector_exp.h"
#include "backends/dispatch.h"
#include "backends/philox.h"
#include "base/error.h"

using namespace normgrad;
using backend::BinaryOp;
using backend::RandomKind;
using backend::ReduceOp;
using backend::TensorRef;
using backend::UnaryOp;

namespace {

backend::Backend& cpu() { return backend::cpu_backend(); }

// A view of `data` starting at element `offset`; contiguous strides unless given.
template <typename T>
TensorRef view(std::vector<T>& data, Shape shape, Strides strides = {}, std::int64_t offset = 0) {
  TensorRef ref;
  ref.data = data.data() + offset;
  ref.dtype = dtype_of_v<T>;
  ref.strides = strides.empty() ? contiguous_strides(shape) : strides;
  ref.shape = std::move(shape);
  return ref;
}

// Deterministic test data in [-1, 1).
template <typename T> std::vector<T> sample_values(std::size_t n, std::uint64_t seed = 1) {
  std::vector<T> values(n);
  for (std::size_t i = 0; i < n; ++i)
    values[i] = static_cast<T>(philox::uniform_double(philox::random_words(seed, i).w[0],
                                                      philox::random_words(seed, i).w[1]) *
                                   2 -
                               1);
  return values;
}

// Runs body with the given OpenMP thread count, then restores the previous one.
template <typename Body> void with_threads(int threads, Body body) {
  const int previous = omp_get_max_threads();
  omp_set_num_threads(threads);
  cpu().set_num_threads(threads);
  body();
  omp_set_num_threads(previous);
  cpu().set_num_threads(previous);
}

}  // namespace

TEST_CASE("cpu memory: aligned allocations, zero bytes, host copies") {
  for (std::size_t bytes : {std::size_t{0}, std::size_t{1}, std::size_t{100}, std::size_t{4096}}) {
    void* data = cpu().allocate(bytes);
    CHECK(data != nullptr);
    CHECK(reinterpret_cast<std::uintptr_t>(data) % 64 == 0);
    cpu().deallocate(data, bytes);
  }
  std::vector<float> host{1, 2, 3}, back(3);
  void* device = cpu().allocate(12);
  cpu().copy_from_host(device, host.data(), 12);
  cpu().copy_to_host(back.data(), device, 12);
  cpu().deallocate(device, 12);
  CHECK(back == host);
}

TEST_CASE("cpu fill and arange on contiguous, sliced, transposed, rank-0 and empty views") {
  std::vector<float> data(12, 0.0f);
  cpu().fill(view(data, {2, 3}, {6, 2}), 5.0);  // every other element of a 2x6 buffer
  CHECK(data == std::vector<float>{5, 0, 5, 0, 5, 0, 5, 0, 5, 0, 5, 0});
  std::vector<std::int64_t> scalar{0};
  cpu().fill(view(scalar, {}), 7.0);
  CHECK(scalar[0] == 7);
  std::vector<double> empty;
  cpu().fill(view(empty, {0, 3}), 1.0);  // nothing to do, nothing touched

  // arange follows the logical row-major order, whatever the memory layout.
  std::vector<double> transposed(6);
  cpu().arange(view(transposed, {2, 3}, {1, 2}), 1.0, 0.5);
  CHECK(transposed == std::vector<double>{1, 2.5, 1.5, 3, 2, 3.5});
  std::vector<std::int64_t> integers(5);
  cpu().arange(view(integers, {5}), -2, 3);
  CHECK(integers == std::vector<std::int64_t>{-2, 1, 4, 7, 10});
  std::vector<float> large(100003);
  cpu().arange(view(large, {100003}), 0, 1);
  CHECK(large[99999] == 99999.0f);
}

TEST_CASE("cpu copy converts dtypes and follows every layout") {
  std::vector<double> source{1.5, -2.25, 3, 4, 5, 6};
  std::vector<float> transposed(6);
  cpu().copy(view(transposed, {3, 2}), view(source, {3, 2}, {1, 3}));
  CHECK(transposed == std::vector<float>{1.5f, 4, -2.25f, 5, 3, 6});
  std::vector<std::int64_t> integers(6);
  cpu().copy(view(integers, {2, 3}), view(source, {2, 3}));
  CHECK(integers == std::vector<std::int64_t>{1, -2, 3, 4, 5, 6});
  // A broadcast row (stride 0) copied into a matrix.
  std::vector<float> row{1, 2, 3}, matrix(6);
  cpu().copy(view(matrix, {2, 3}), view(row, {2, 3}, {0, 1}));
  CHECK(matrix == std::vector<float>{1, 2, 3, 1, 2, 3});
  // A sliced source (second column of a 3x4 matrix) into a rank-1 destination.
  std::vector<float> wide(12), column(3);
  std::iota(wide.begin(), wide.end(), 0.0f);
  cpu().copy(view(column, {3}), view(wide, {3}, {4}, 1));
  CHECK(column == std::vector<float>{1, 5, 9});
  // Large contiguous copies (the memcpy path, split over threads) are exact.
  const std::vector<float> big = sample_values<float>(300001);
  std::vector<float> big_source = big, big_copy(big.size());
  cpu().copy(view(big_copy, {300001}), view(big_source, {300001}));
  CHECK(big_copy == big);
}

TEST_CASE("cpu unary ops match the standard library on strided views") {
  std::vector<double> input{-2.5, -1, -0.25, 0, 0.5, 1, 3, 0.75};
  struct Case {
    UnaryOp op;
    double alpha, beta;
    double (*reference)(double, double, double);
  };
  const Case cases[] = {
      {UnaryOp::Neg, 0, 0, [](double x, double, double) { return -x; }},
      {UnaryOp::Abs, 0, 0, [](double x, double, double) { return std::fabs(x); }},
      {UnaryOp::Exp, 0, 0, [](double x, double, double) { return std::exp(x); }},
      {UnaryOp::Tanh, 0, 0, [](double x, double, double) { return std::tanh(x); }},
      {UnaryOp::Sigmoid, 0, 0, [](double x, double, double) { return 1 / (1 + std::exp(-x)); }},
      {UnaryOp::Relu, 0, 0, [](double x, double, double) { return x > 0 ? x : 0.0; }},
      {UnaryOp::Gelu, 0, 0,
       [](double x, double, double) { return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0))); }},
      {UnaryOp::Sign, 0, 0, [](double x, double, double) { return double((x > 0) - (x < 0)); }},
      {UnaryOp::Square, 0, 0, [](double x, double, double) { return x * x; }},
      {UnaryOp::LeakyRelu, 0.1, 0, [](double x, double a, double) { return x > 0 ? x : a * x; }},
      {UnaryOp::Clamp, -1, 0.5,
       [](double x, double a, double b) { return std::min(std::max(x, a), b); }},
      {UnaryOp::AddScalar, 2, 0, [](double x, double a, double) { return x + a; }},
      {UnaryOp::MulScalar, -3, 0, [](double x, double a, double) { return x * a; }},
      {UnaryOp::RsubScalar, 1, 0, [](double x, double a, double) { return a - x; }},
      {UnaryOp::RdivScalar, 2, 0, [](double x, double a, double) { return a / x; }},
  };
  for (const Case& c : cases) {
    // The input read transposed: a 4x2 view of the 2x4 buffer.
    std::vector<double> out(8);
    cpu().unary(c.op, view(out, {4, 2}), view(input, {4, 2}, {1, 4}), c.alpha, c.beta);
    for (int i = 0; i < 4; ++i)
      for (int j = 0; j < 2; ++j) {
        const double expected = c.reference(input[j * 4 + i], c.alpha, c.beta);
        if (std::isinf(expected))  // 2 / 0
          CHECK(out[i * 2 + j] == expected);
        else
          CHECK(out[i * 2 + j] == doctest::Approx(expected).epsilon(1e-14));
      }
  }
  std::vector<double> positive{0.25, 0.5, 2, 9}, out(4);
  cpu().unary(UnaryOp::Log, view(out, {4}), view(positive, {4}), 0, 0);
  CHECK(out[3] == doctest::Approx(std::log(9.0)));
  cpu().unary(UnaryOp::Rsqrt, view(out, {4}), view(positive, {4}), 0, 0);
  CHECK(out[0] == doctest::Approx(2.0));
  cpu().unary(UnaryOp::Sqrt, view(out, {4}), view(positive, {4}), 0, 0);
  CHECK(out[3] == doctest::Approx(3.0));
  cpu().unary(UnaryOp::PowScalar, view(out, {4}), view(positive, {4}), 1.5, 0);
  CHECK(out[1] == doctest::Approx(std::pow(0.5, 1.5)));

  // float32 GELU against the double formula; a broadcast scalar input; rank 0.
  std::vector<float> x32{-3, -0.5f, 0, 0.7f, 2}, y32(5);
  cpu().unary(UnaryOp::Gelu, view(y32, {5}), view(x32, {5}), 0, 0);
  for (int i = 0; i < 5; ++i)
    CHECK(y32[i] ==
          doctest::Approx(0.5 * x32[i] * (1 + std::erf(x32[i] / std::sqrt(2.0)))).epsilon(1e-6));
  std::vector<float> broadcast_out(6);
  cpu().unary(UnaryOp::Exp, view(broadcast_out, {2, 3}), view(x32, {2, 3}, {0, 0}, 3), 0, 0);
  CHECK(broadcast_out == std::vector<float>(6, std::exp(0.7f)));
  std::vector<float> scalar_in{4}, scalar_out{0};
  cpu().unary(UnaryOp::Sqrt, view(scalar_out, {}), view(scalar_in, {}), 0, 0);
  CHECK(scalar_out[0] == 2.0f);
}

TEST_CASE("cpu unary int64 ops stay in the integers, and float-only ops throw") {
  std::vector<std::int64_t> x{-5, 0, 3, std::numeric_limits<std::int64_t>::min()}, y(4);
  cpu().unary(UnaryOp::Neg, view(y, {3}), view(x, {3}), 0, 0);
  CHECK(std::vector<std::int64_t>(y.begin(), y.begin() + 3) == std::vector<std::int64_t>{5, 0, -3});
  cpu().unary(UnaryOp::Abs, view(y, {4}), view(x, {4}), 0, 0);
  CHECK(y[0] == 5);
  CHECK(y[3] == std::numeric_limits<std::int64_t>::min());  // wraps, as two's complement does
  cpu().unary(UnaryOp::Sign, view(y, {3}), view(x, {3}), 0, 0);
  CHECK(std::vector<std::int64_t>(y.begin(), y.begin() + 3) == std::vector<std::int64_t>{-1, 0, 1});
  cpu().unary(UnaryOp::Square, view(y, {3}), view(x, {3}), 0, 0);
  CHECK(y[0] == 25);
  cpu().unary(UnaryOp::AddScalar, view(y, {3}), view(x, {3}), 10, 0);
  CHECK(y[0] == 5);
  cpu().unary(UnaryOp::MulScalar, view(y, {3}), view(x, {3}), -2, 0);
  CHECK(y[2] == -6);
  cpu().unary(UnaryOp::RsubScalar, view(y, {3}), view(x, {3}), 1, 0);
  CHECK(y[0] == 6);
  CHECK_THROWS_AS(cpu().unary(UnaryOp::Exp, view(y, {3}), view(x, {3}), 0, 0), normgrad::Error);
  CHECK_THROWS_WITH(cpu().unary(UnaryOp::Sqrt, view(y, {3}), view(x, {3}), 0, 0),
                    doctest::Contains("cpu unary"));
}

TEST_CASE("cpu binary ops with broadcast, transposed and rank-0 operands") {
  // a: 2x3 contiguous; b: a row broadcast over rows (stride 0), then a column (stride 0).
  std::vector<double> a{1, 2, 3, 4, 5, 6}, row{10, 20, 30}, column{100, 200}, out(6);
  cpu().binary(BinaryOp::Add, view(out, {2, 3}), view(a, {2, 3}), view(row, {2, 3}, {0, 1}), 0);
  CHECK(out == std::vector<double>{11, 22, 33, 14, 25, 36});
  cpu().binary(BinaryOp::Sub, view(out, {2, 3}), view(column, {2, 3}, {1, 0}), view(a, {2, 3}), 0);
  CHECK(out == std::vector<double>{99, 98, 97, 196, 195, 194});
  // a read transposed: out (3x2) = a^T * 2
  std::vector<double> two{2};
  cpu().binary(BinaryOp::Mul, view(out, {3, 2}), view(a, {3, 2}, {1, 3}), view(two, {3, 2}, {0, 0}),
               0);
  CHECK(out == std::vector<double>{2, 8, 4, 10, 6, 12});
  cpu().binary(BinaryOp::Div, view(out, {2, 3}), view(a, {2, 3}), view(row, {2, 3}, {0, 1}), 0);
  CHECK(out[5] == doctest::Approx(0.2));
  cpu().binary(BinaryOp::Pow, view(out, {6}), view(a, {6}), view(two, {6}, {0}), 0);
  CHECK(out == std::vector<double>{1, 4, 9, 16, 25, 36});

  const double nan = std::numeric_limits<double>::quiet_NaN();
  std::vector<double> p{1, nan, 3}, q{2, 0, nan}, m(3);
  cpu().binary(BinaryOp::Maximum, view(m, {3}), view(p, {3}), view(q, {3}), 0);
  CHECK(m[0] == 2);
  CHECK(std::isnan(m[1]));
  CHECK(std::isnan(m[2]));
  cpu().binary(BinaryOp::Minimum, view(m, {3}), view(p, {3}), view(q, {3}), 0);
  CHECK(m[0] == 1);
  CHECK(std::isnan(m[2]));

  // Comparisons write 1/0 in out's dtype, here int64 and float32 from float64 inputs.
  std::vector<double> u{1, 2, 3, 4}, v{4, 2, 2, 4};
  std::vector<std::int64_t> mask(4);
  std::vector<float> float_mask(4);
  const std::pair<BinaryOp, std::vector<std::int64_t>> comparisons[] = {
      {BinaryOp::Eq, {0, 1, 0, 1}}, {BinaryOp::Ne, {1, 0, 1, 0}}, {BinaryOp::Lt, {1, 0, 0, 0}},
      {BinaryOp::Le, {1, 1, 0, 1}}, {BinaryOp::Gt, {0, 0, 1, 0}}, {BinaryOp::Ge, {0, 1, 1, 1}}};
  for (const auto& [op, expected] : comparisons) {
    cpu().binary(op, view(mask, {4}), view(u, {4}), view(v, {4}), 0);
    CHECK(mask == expected);
    cpu().binary(op, view(float_mask, {4}), view(u, {4}), view(v, {4}), 0);
    CHECK(float_mask == std::vector<float>(expected.begin(), expected.end()));
  }

  std::vector<float> s1{3}, s2{4}, s3{0};
  cpu().binary(BinaryOp::Mul, view(s3, {}), view(s1, {}), view(s2, {}), 0);
  CHECK(s3[0] == 12.0f);
  std::vector<float> none;
  cpu().binary(BinaryOp::Add, view(none, {0, 4}), view(none, {0, 4}), view(none, {0, 4}), 0);
}

TEST_CASE("cpu binary gradient ops and int64 arithmetic") {
  std::vector<double> dy{1, 2, -1, 0.5}, x{-1, 0.5, 2, -0.2}, out(4);
  cpu().binary(BinaryOp::TanhGrad, view(out, {4}), view(dy, {4}), view(x, {4}), 0);
  CHECK(out[1] == doctest::Approx(2 * (1 - 0.25)));
  cpu().binary(BinaryOp::SigmoidGrad, view(out, {4}), view(dy, {4}), view(x, {4}), 0);
  CHECK(out[1] == doctest::Approx(2 * 0.5 * 0.5));
  cpu().binary(BinaryOp::ReluGrad, view(out, {4}), view(dy, {4}), view(x, {4}), 0);
  CHECK(out == std::vector<double>{0, 2, -1, 0});
  cpu().binary(BinaryOp::LeakyReluGrad, view(out, {4}), view(dy, {4}), view(x, {4}), 0.01);
  CHECK(out[3] == doctest::Approx(0.005));
  cpu().binary(BinaryOp::GeluGrad, view(out, {4}), view(dy, {4}), view(x, {4}), 0);
  for (int i = 0; i < 4; ++i) {  // against a central difference of gelu
    const auto gelu = [](double t) { return 0.5 * t * (1 + std::erf(t / std::sqrt(2.0))); };
    const double h = 1e-6;
    CHECK(out[i] ==
          doctest::Approx(dy[i] * (gelu(x[i] + h) - gelu(x[i] - h)) / (2 * h)).epsilon(1e-7));
  }

  std::vector<std::int64_t> a{5, -3, 7}, b{2, 2, -1}, c(3);
  cpu().binary(BinaryOp::Add, view(c, {3}), view(a, {3}), view(b, {3}), 0);
  CHECK(c == std::vector<std::int64_t>{7, -1, 6});
  cpu().binary(BinaryOp::Sub, view(c, {3}), view(a, {3}), view(b, {3}), 0);
  CHECK(c == std::vector<std::int64_t>{3, -5, 8});
  cpu().binary(BinaryOp::Mul, view(c, {3}), view(a, {3}), view(b, {3}), 0);
  CHECK(c == std::vector<std::int64_t>{10, -6, -7});
  cpu().binary(BinaryOp::Maximum, view(c, {3}), view(a, {3}), view(b, {3}), 0);
  CHECK(c == std::vector<std::int64_t>{5, 2, 7});
  cpu().binary(BinaryOp::Minimum, view(c, {3}), view(a, {3}), view(b, {3}), 0);
  CHECK(c == std::vector<std::int64_t>{2, -3, -1});
  CHECK_THROWS_WITH(cpu().binary(BinaryOp::Div, view(c, {3}), view(a, {3}), view(b, {3}), 0),
                    doctest::Contains("int64 division is not supported"));
  CHECK_THROWS_AS(cpu().binary(BinaryOp::TanhGrad, view(c, {3}), view(a, {3}), view(b, {3}), 0),
                  normgrad::Error);
}

TEST_CASE("cpu elementwise ops on large tensors match a naive loop") {
  // Large enough to be split over threads, in the three row forms: all unit stride,
  // a broadcast row, a broadcast column.
  const std::int64_t rows = 300, cols = 517;
  std::vector<float> a = sample_values<float>(rows * cols, 1), row = sample_values<float>(cols, 2),
                     column = sample_values<float>(rows, 3), out(rows * cols);
  cpu().binary(BinaryOp::Add, view(out, {rows, cols}), view(a, {rows, cols}),
               view(row, {rows, cols}, {0, 1}), 0);
  bool all_equal = true;
  for (std::int64_t i = 0; i < rows; ++i)
    for (std::int64_t j = 0; j < cols; ++j)
      all_equal = all_equal && out[i * cols + j] == a[i * cols + j] + row[j];
  CHECK(all_equal);
  cpu().binary(BinaryOp::Mul, view(out, {rows, cols}), view(column, {rows, cols}, {1, 0}),
               view(a, {rows, cols}), 0);
  all_equal = true;
  for (std::int64_t i = 0; i < rows; ++i)
    for (std::int64_t j = 0; j < cols; ++j)
      all_equal = all_equal && out[i * cols + j] == column[i] * a[i * cols + j];
  CHECK(all_equal);
  cpu().unary(UnaryOp::Tanh, view(out, {cols, rows}), view(a, {cols, rows}, {1, cols}), 0, 0);
  all_equal = true;
  for (std::int64_t i = 0; i < cols; ++i)
    for (std::int64_t j = 0; j < rows; ++j)
      all_equal = all_equal && out[i * rows + j] == std::tanh(a[j * cols + i]);
  CHECK(all_equal);
}

TEST_CASE("cpu where selects with a condition of any dtype, broadcast") {
  std::vector<std::int64_t> cond{1, 0, 1};
  std::vector<float> a{1, 2, 3, 4, 5, 6}, b{-1}, out(6);
  cpu().where(view(out, {2, 3}), view(cond, {2, 3}, {0, 1}), view(a, {2, 3}),
              view(b, {2, 3}, {0, 0}));
  CHECK(out == std::vector<float>{1, -1, 3, 4, -1, 6});
  std::vector<double> float_cond{0, 0.5}, x{1, 2}, y{3, 4}, z(2);
  cpu().where(view(z, {2}), view(float_cond, {2}), view(x, {2}), view(y, {2}));
  CHECK(z == std::vector<double>{3, 2});
}

TEST_CASE("cpu reduce sums over any dims and layouts") {
  // x: 2x3x4 with x[i][j][k] = 12 i + 4 j + k.
  std::vector<double> x(24);
  std::iota(x.begin(), x.end(), 0.0);
  std::vector<double> out(12);
  cpu().reduce(ReduceOp::Sum, view(out, {2, 3, 1}), view(x, {2, 3, 4}), 0, 1.0);  // innermost
  CHECK(std::vector<double>(out.begin(), out.begin() + 6) ==
        std::vector<double>{6, 22, 38, 54, 70, 86});
  cpu().reduce(ReduceOp::Sum, view(out, {1, 3, 4}), view(x, {2, 3, 4}), 0,
               0.5);  // outermost, a mean
  CHECK(out == std::vector<double>{6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17});
  cpu().reduce(ReduceOp::Sum, view(out, {2, 1, 4}), view(x, {2, 3, 4}), 0, 1.0);  // middle
  CHECK(std::vector<double>(out.begin(), out.begin() + 8) ==
        std::vector<double>{12, 15, 18, 21, 48, 51, 54, 57});
  cpu().reduce(ReduceOp::Sum, view(out, {1, 3, 1}), view(x, {2, 3, 4}), 0, 1.0);  // two dims
  CHECK(std::vector<double>(out.begin(), out.begin() + 3) == std::vector<double>{60, 92, 124});
  cpu().reduce(ReduceOp::Sum, view(out, {1, 1, 1}), view(x, {2, 3, 4}), 0, 1.0);  // all
  CHECK(out[0] == 276);
  // The input permuted to 4x3x2 (strides 1, 4, 12), reduced over its last dim.
  cpu().reduce(ReduceOp::Sum, view(out, {4, 3, 1}), view(x, {4, 3, 2}, {1, 4, 12}), 0, 1.0);
  CHECK(out == std::vector<double>{12, 20, 28, 14, 22, 30, 16, 24, 32, 18, 26, 34});
  // A size-1 dim named in the mask is reduced (trivially); rank 0 in, rank 0 out.
  std::vector<double> one_row{1, 2, 3}, sums(3);
  cpu().reduce(ReduceOp::Sum, view(sums, {1, 3}), view(one_row, {1, 3}), 0b01, 2.0);
  CHECK(sums == std::vector<double>{2, 4, 6});
  std::vector<double> scalar{5}, scalar_out{0};
  cpu().reduce(ReduceOp::Sum, view(scalar_out, {}), view(scalar, {}), 0, 3.0);
  CHECK(scalar_out[0] == 15);
  // An empty reduced dim sums to 0; int64 sums are exact.
  std::vector<float> none, zero_sums{9, 9};
  cpu().reduce(ReduceOp::Sum, view(zero_sums, {2, 1}), view(none, {2, 0}), 0, 1.0);
  CHECK(zero_sums == std::vector<float>{0, 0});
  std::vector<std::int64_t> integers{5, -3, 7}, integer_sum{0};
  cpu().reduce(ReduceOp::Sum, view(integer_sum, {1}), view(integers, {3}), 0, 1.0);
  CHECK(integer_sum[0] == 9);
}

TEST_CASE("cpu reduce max, min and arg-reductions") {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  std::vector<double> x{3, 1, 3, -2, 7, 7, 0, 0, 5, nan, -1, 2};  // 3x4
  std::vector<double> out(4);
  std::vector<std::int64_t> index(4);
  cpu().reduce(ReduceOp::Max, view(out, {3, 1}), view(x, {3, 4}), 0, 1);
  CHECK(out[0] == 3);
  CHECK(out[1] == 7);
  CHECK(std::isnan(out[2]));  // NaN propagates
  cpu().reduce(ReduceOp::Min, view(out, {1, 4}), view(x, {3, 4}), 0, 1);
  CHECK(out[0] == 3);
  CHECK(std::isnan(out[1]));
  CHECK(out[2] == -1);
  CHECK(out[3] == -2);
  // First index on ties; a NaN counts as the extreme.
  cpu().reduce(ReduceOp::ArgMax, view(index, {3, 1}), view(x, {3, 4}), 0, 1);
  CHECK(std::vector<std::int64_t>(index.begin(), index.begin() + 3) ==
        std::vector<std::int64_t>{0, 0, 1});
  cpu().reduce(ReduceOp::ArgMin, view(index, {3, 1}), view(x, {3, 4}), 0, 1);
  CHECK(std::vector<std::int64_t>(index.begin(), index.begin() + 3) ==
        std::vector<std::int64_t>{3, 2, 1});
  cpu().reduce(ReduceOp::ArgMax, view(index, {1, 4}), view(x, {3, 4}), 0, 1);
  CHECK(index == std::vector<std::int64_t>{1, 2, 0, 2});
  std::vector<std::int64_t> integers{4, 9, 9, 1}, best{0};
  cpu().reduce(ReduceOp::ArgMax, view(best, {1}), view(integers, {4}), 0, 1);
  CHECK(best[0] == 1);
  cpu().reduce(ReduceOp::Max, view(best, {1}), view(integers, {4}), 0, 1);
  CHECK(best[0] == 9);
  CHECK_THROWS_AS(cpu().reduce(ReduceOp::Max, view(out, {2, 1}), view(x, {2, 0}), 0, 1),
                  normgrad::Error);
}

TEST_CASE("cpu reductions are accurate and do not depend on the thread count") {
  // 10^7 copies of 0.1f: a left-to-right float32 sum gives 1087937, 8.8% too high.
  std::vector<float> tenths(10'000'000, 0.1f), total{0};
  cpu().reduce(ReduceOp::Sum, view(total, {1}), view(tenths, {10'000'000}), 0, 1.0);
  const double exact = 1e7 * static_cast<double>(0.1f);
  CHECK(std::fabs(total[0] - exact) / exact < 1e-6);

  // Row plan, column plan, a region that does not merge, and one long row: each bit-identical
  // with 1 and 2 threads, and close to a double-precision naive sum.
  const std::int64_t rows = 1200, cols = 900;
  std::vector<float> x = sample_values<float>(rows * cols, 7);
  struct Case {
    Shape out_shape, in_shape;
    Strides in_strides;
  };
  const Case cases[] = {
      {{rows, 1}, {rows, cols}, {cols, 1}},          // x.sum(1)
      {{1, cols}, {rows, cols}, {cols, 1}},          // x.sum(0)
      {{1, 1}, {rows, cols}, {cols, 1}},             // x.sum()
      {{1, 30, 1}, {40, 30, 450}, {27000, 900, 2}},  // every other column, two dims reduced
      {{cols, 1}, {cols, rows}, {1, cols}},          // x.T.sum(1): the column plan again
      {{1, 10}, {rows, 10}, {cols, 1}},              // too narrow for columns: strided rows
  };
  for (const Case& c : cases) {
    const std::int64_t outputs = numel(c.out_shape);
    std::vector<float> one(outputs), two(outputs);
    with_threads(1, [&] {
      cpu().reduce(ReduceOp::Sum, view(one, c.out_shape), view(x, c.in_shape, c.in_strides), 0,
                   1.0);
    });
    with_threads(2, [&] {
      cpu().reduce(ReduceOp::Sum, view(two, c.out_shape), view(x, c.in_shape, c.in_strides), 0,
                   1.0);
    });
    CHECK(one == two);
    // The naive sum in double, over the same elements.
    std::vector<double> naive(outputs, 0.0);
    const std::int64_t rank = static_cast<std::int64_t>(c.in_shape.size());
    std::vector<std::int64_t> index(rank, 0);
    for (std::int64_t linear = 0; linear < numel(c.in_shape); ++linear) {
      std::int64_t offset = 0, out_index = 0;
      for (std::int64_t d = 0; d < rank; ++d) {
        offset += index[d] * c.in_strides[d];
        out_index = out_index * c.out_shape[d] + (c.out_shape[d] == 1 ? 0 : index[d]);
      }
      naive[out_index] += x[offset];
      for (std::int64_t d = rank - 1; d >= 0 && ++index[d] == c.in_shape[d]; --d) index[d] = 0;
    }
    for (std::int64_t i = 0; i < outputs; ++i)
      CHECK(one[i] == doctest::Approx(naive[i]).epsilon(1e-4));
  }

  std::vector<float> long_row = sample_values<float>(5'000'001, 3), sum_one{0}, sum_two{0},
                     max_one{0}, max_two{0};
  with_threads(1, [&] {
    cpu().reduce(ReduceOp::Sum, view(sum_one, {1}), view(long_row, {5'000'001}), 0, 1.0);
    cpu().reduce(ReduceOp::Max, view(max_one, {1}), view(long_row, {5'000'001}), 0, 1.0);
  });
  with_threads(2, [&] {
    cpu().reduce(ReduceOp::Sum, view(sum_two, {1}), view(long_row, {5'000'001}), 0, 1.0);
    cpu().reduce(ReduceOp::Max, view(max_two, {1}), view(long_row, {5'000'001}), 0, 1.0);
  });
  CHECK(sum_one[0] == sum_two[0]);
  CHECK(max_one[0] == max_two[0]);
  CHECK(max_one[0] == *std::max_element(long_row.begin(), long_row.end()));
}

TEST_CASE("philox 4x32-10 reproduces the published known answers") {
  // Random123's kat_vectors: counter, key -> output.
  static_assert(philox::philox4x32_10({{0, 0, 0, 0}}, 0, 0).w[0] == 0x6627e8d5u);
  const philox::Words zeros = philox::philox4x32_10({{0, 0, 0, 0}}, 0, 0);
  CHECK(zeros.w[0] == 0x6627e8d5u);
  CHECK(zeros.w[1] == 0xe169c58du);
  CHECK(zeros.w[2] == 0xbc57ac4cu);
  CHECK(zeros.w[3] == 0x9b00dbd8u);
  const philox::Words ones = philox::philox4x32_10(
      {{0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu}}, 0xffffffffu, 0xffffffffu);
  CHECK(ones.w[0] == 0x408f276du);
  CHECK(ones.w[3] == 0x6d5451fdu);
  const philox::Words pi = philox::philox4x32_10(
      {{0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u}}, 0xa4093822u, 0x299f31d0u);
  CHECK(pi.w[0] == 0xd16cfe09u);
  CHECK(pi.w[1] == 0x94fdccebu);
  CHECK(pi.w[2] == 0x5001e420u);
  CHECK(pi.w[3] == 0x24126ea1u);
}

TEST_CASE("cpu random: deterministic, counter-addressed, layout- and thread-independent") {
  const std::int64_t n = 100000;
  std::vector<float> first(n), second(n), shifted(n + 5);
  cpu().random(view(first, {n}), RandomKind::Normal, 42, 0, 0, 1);
  cpu().random(view(second, {n}), RandomKind::Normal, 42, 0, 0, 1);
  CHECK(first == second);
  cpu().random(view(second, {n}), RandomKind::Normal, 43, 0, 0, 1);
  CHECK(first != second);
  // Element i uses counter offset + i only.
  cpu().random(view(shifted, {n + 5}), RandomKind::Normal, 42, 0, 0, 1);
  cpu().random(view(second, {n}), RandomKind::Normal, 42, 5, 0, 1);
  CHECK(std::equal(second.begin(), second.end(), shifted.begin() + 5));
  // A transposed output receives the same numbers in logical row-major order.
  std::vector<double> contiguous(6), transposed(6);
  cpu().random(view(contiguous, {2, 3}), RandomKind::Uniform, 9, 0, 0, 1);
  cpu().random(view(transposed, {2, 3}, {1, 2}), RandomKind::Uniform, 9, 0, 0, 1);
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j) CHECK(transposed[i + 2 * j] == contiguous[i * 3 + j]);
  std::vector<double> one(n), two(n);
  with_threads(1, [&] { cpu().random(view(one, {n}), RandomKind::Uniform, 5, 7, -1, 1); });
  with_threads(2, [&] { cpu().random(view(two, {n}), RandomKind::Uniform, 5, 7, -1, 1); });
  CHECK(one == two);
}

TEST_CASE("cpu random: counters read from memory give the draw at (seed, base + offset)") {
  const std::uint64_t seed = 0x9e3779b97f4a7c15u;  // past int64's range: bits carried as they are
  std::vector<std::int64_t> cell = {std::bit_cast<std::int64_t>(seed), 1000};
  for (const RandomKind kind : {RandomKind::Uniform, RandomKind::Normal, RandomKind::Integer}) {
    INFO(static_cast<int>(kind));
    std::vector<double> expected(257), got(257);
    cpu().random(view(expected, {257}), kind, seed, 1000 + 13, -2, 3);
    cpu().random_with_counters(view(got, {257}), kind, view(cell, {2}), 13, -2, 3);
    CHECK(got == expected);
  }
  std::vector<std::int64_t> three(3);
  std::vector<double> cell64(2), out(4);
  CHECK_THROWS_WITH_AS(
      cpu().random_with_counters(view(out, {4}), RandomKind::Uniform, view(three, {3}), 0, 0, 1),
      doctest::Contains("counters must be a contiguous int64 tensor of 2 values"), Error);
  CHECK_THROWS_WITH_AS(
      cpu().random_with_counters(view(out, {4}), RandomKind::Uniform, view(cell64, {2}), 0, 0, 1),
      doctest::Contains("float64 of shape [2]"), Error);
}

namespace {

// The float32 uniform of one counter as random.cpp's header defines it, element by element.
float reference_uniform(std::uint64_t seed, std::uint64_t counter, double low, double high) {
  const double u = philox::uniform_float(philox::random_words(seed, counter).w[0]);
  float value = static_cast<float>(low + u * (high - low));
  const auto typed_high = static_cast<float>(high);
  if (high > low && !(value < typed_high))
    value = std::nextafter(typed_high, static_cast<float>(low));
  return value;
}

}  // namespace

TEST_CASE("cpu random: float32 uniforms eight at a time equal the element-by-element stream") {
  // (low, high): the unit interval, a shifted one, a reversed one (no nudging), and one so
  // narrow near 1 that a rounded value often reaches high and is nudged below it.
  const std::vector<std::pair<double, double>> ranges = {
      {0, 1}, {2, 5}, {-1, 1}, {1, -1}, {1.0, 1.0000001}};
  // Offsets whose counters cross 2^32 within a vector of 8 and at its edge.
  const std::vector<std::uint64_t> offsets = {0, 3, (1ull << 32) - 5, (1ull << 32) - 8,
                                              0xfffffffffffffff0ull};
  for (const auto& range : ranges) {
    const auto& low = range.first;
    const auto& high = range.second;
    for (std::uint64_t offset : offsets) {
      CAPTURE(low);
      CAPTURE(high);
      CAPTURE(offset);
      for (std::int64_t count : {0, 1, 7, 8, 9, 17, 64}) {
        std::vector<float> fast(static_cast<std::size_t>(count) + 1, -7.0f);
        if (!backend::cpu::uniform_floats_avx2(fast.data(), count, 0x123456789abcdefull, offset,
                                               low, high)) {
          MESSAGE("the CPU has no AVX2: only the element-by-element path runs here");
          return;
        }
        for (std::int64_t i = 0; i < count; ++i)
          REQUIRE(fast[i] == reference_uniform(0x123456789abcdefull,
                                               offset + static_cast<std::uint64_t>(i), low, high));
        CHECK(fast[count] == -7.0f);  // nothing written past the end
      }
    }
  }
  // Through the backend: contiguous rows take the eight-at-a-time path, a transposed output
  // the element loop; both give every logical element its counter's value.
  const std::int64_t rows = 37, columns = 53;
  std::vector<float> contiguous(rows * columns), transposed(rows * columns);
  for (int threads : {1, 2}) {
    with_threads(threads, [&] {
      cpu().random(view(contiguous, {rows, columns}), RandomKind::Uniform, 11, 5, 1.0, 1.0000001);
      cpu().random(view(transposed, {rows, columns}, {1, rows}), RandomKind::Uniform, 11, 5, 1.0,
                   1.0000001);
    });
    for (std::int64_t i = 0; i < rows; ++i)
      for (std::int64_t j = 0; j < columns; ++j) {
        const float expected = reference_uniform(11, 5 + i * columns + j, 1.0, 1.0000001);
        REQUIRE(contiguous[i * columns + j] == expected);
        REQUIRE(transposed[i + j * rows] == expected);
      }
  }
}

TEST_CASE("cpu random: moments and ranges of uniform, normal and integer draws") {
  const std::int64_t n = 100000;
  const auto moments = [](const auto& values) {
    double mean = 0, square = 0;
    for (double v : values) mean += v;
    mean /= values.size();
    for (double v : values) square += (v - mean) * (v - mean);
    return std::pair<double, double>{mean, square / values.size()};
  };
  std::vector<float> uniform32(n);
  cpu().random(view(uniform32, {n}), RandomKind::Uniform, 1, 0, 2, 5);
  CHECK(*std::min_element(uniform32.begin(), uniform32.end()) >= 2.0f);
  CHECK(*std::max_element(uniform32.begin(), uniform32.end()) < 5.0f);
  CHECK(moments(uniform32).first == doctest::Approx(3.5).epsilon(0.01));
  CHECK(moments(uniform32).second == doctest::Approx(0.75).epsilon(0.02));  // (5 - 2)^2 / 12
  std::vector<double> uniform64(n);
  cpu().random(view(uniform64, {n}), RandomKind::Uniform, 2, 0, 0, 1);
  CHECK(moments(uniform64).first == doctest::Approx(0.5).epsilon(0.01));
  CHECK(moments(uniform64).second == doctest::Approx(1.0 / 12).epsilon(0.02));
  for (auto dtype_case : {0, 1}) {
    std::vector<double> normal(n);
    if (dtype_case == 0) {
      cpu().random(view(normal, {n}), RandomKind::Normal, 3, 0, 1.5, 2);
    } else {
      std::vector<float> normal32(n);
      cpu().random(view(normal32, {n}), RandomKind::Normal, 3, 0, 1.5, 2);
      normal.assign(normal32.begin(), normal32.end());
    }
    CHECK(std::fabs(moments(normal).first - 1.5) < 0.03);  // std of the mean: 0.0063
    CHECK(moments(normal).second == doctest::Approx(4.0).epsilon(0.03));
  }
  std::vector<std::int64_t> integers(n);
  cpu().random(view(integers, {n}), RandomKind::Integer, 4, 0, -3, 4);
  CHECK(*std::min_element(integers.begin(), integers.end()) == -3);
  CHECK(*std::max_element(integers.begin(), integers.end()) == 3);
  CHECK(std::fabs(moments(integers).first) < 0.05);
  std::vector<float> float_integers(1000);
  cpu().random(view(float_integers, {1000}), RandomKind::Integer, 4, 0, 0, 10);
  for (float v : float_integers) CHECK((v >= 0 && v <= 9 && v == std::floor(v)));
  CHECK_THROWS_AS(cpu().random(view(integers, {n}), RandomKind::Normal, 4, 0, 0, 1),
                  normgrad::Error);
}

namespace {

// out[b][i][j] = sum_k a(b, i, k) b(b, k, j), reading a and b through arbitrary element maps.
template <typename A, typename B>
std::vector<double> naive_matmul(std::int64_t batches, std::int64_t m, std::int64_t n,
                                 std::int64_t k, A a, B b) {
  std::vector<double> out(batches * m * n, 0.0);
  for (std::int64_t batch = 0; batch < batches; ++batch)
    for (std::int64_t i = 0; i < m; ++i)
      for (std::int64_t j = 0; j < n; ++j)
        for (std::int64_t p = 0; p < k; ++p)
          out[(batch * m + i) * n + j] += a(batch, i, p) * b(batch, p, j);
  return out;
}

}  // namespace

TEST_CASE("cpu matmul: a stack of small products, shared among threads, has each product's bits") {
  // 48 products of two rows of weights [2, 37] with a [37, 70] matrix, as attention makes
  // them; the output is transposed in each product (written through scratch), so that each
  // thread needs scratch of its own.
  const std::int64_t batches = 48, m = 2, k = 37, n = 70;
  std::vector<float> a = sample_values<float>(batches * m * k, 11),
                     b = sample_values<float>(batches * k * n, 12);
  std::vector<float> stacked(batches * m * n, 0.5f);
  cpu().matmul(view(stacked, {batches, m, n}, {m * n, 1, m}), view(a, {batches, m, k}),
               view(b, {batches, k, n}), true);
  for (std::int64_t batch = 0; batch < batches; ++batch) {
    std::vector<float> alone(m * n, 0.5f);
    std::vector<float> a_one(a.begin() + batch * m * k, a.begin() + (batch + 1) * m * k),
        b_one(b.begin() + batch * k * n, b.begin() + (batch + 1) * k * n);
    cpu().matmul(view(alone, {m, n}, {1, m}), view(a_one, {m, k}), view(b_one, {k, n}), true);
    for (std::int64_t j = 0; j < m * n; ++j) {
      INFO("product " << batch << ", element " << j);
      CHECK(stacked[batch * m * n + j] == alone[j]);
    }
  }
}

TEST_CASE("cpu matmul: all transpose combinations, copies, batch broadcast, accumulate") {
  const std::int64_t m = 5, n = 7, k = 6;
  std::vector<float> a_data = sample_values<float>(m * k, 1),
                     b_data = sample_values<float>(k * n, 2);
  // a(i, p) and b(p, j), stored row-major; their transposes stored row-major as well.
  std::vector<float> a_transposed(m * k), b_transposed(k * n);
  for (std::int64_t i = 0; i < m; ++i)
    for (std::int64_t p = 0; p < k; ++p) a_transposed[p * m + i] = a_data[i * k + p];
  for (std::int64_t p = 0; p < k; ++p)
    for (std::int64_t j = 0; j < n; ++j) b_transposed[j * k + p] = b_data[p * n + j];
  const auto expected = naive_matmul(
      1, m, n, k, [&](auto, auto i, auto p) { return double(a_data[i * k + p]); },
      [&](auto, auto p, auto j) { return double(b_data[p * n + j]); });
  for (bool transpose_a : {false, true})
    for (bool transpose_b : {false, true}) {
      const TensorRef a = transpose_a ? view(a_transposed, {m, k}, {1, m}) : view(a_data, {m, k});
      const TensorRef b = transpose_b ? view(b_transposed, {k, n}, {1, k}) : view(b_data, {k, n});
      std::vector<float> out(m * n);
      cpu().matmul(view(out, {m, n}), a, b, false);
      for (std::int64_t i = 0; i < m * n; ++i)
        CHECK(out[i] == doctest::Approx(expected[i]).epsilon(1e-5));
    }

  // a sliced with a column stride of 2 (BLAS cannot read it: copied first), accumulating into ones.
  std::vector<double> wide = sample_values<double>(m * 2 * k, 3),
                      b64 = sample_values<double>(k * n, 4);
  std::vector<double> out64(m * n, 1.0);
  cpu().matmul(view(out64, {m, n}), view(wide, {m, k}, {2 * k, 2}), view(b64, {k, n}), true);
  const auto expected64 = naive_matmul(
      1, m, n, k, [&](auto, auto i, auto p) { return wide[i * 2 * k + p * 2]; },
      [&](auto, auto p, auto j) { return b64[p * n + j]; });
  for (std::int64_t i = 0; i < m * n; ++i)
    CHECK(out64[i] == doctest::Approx(1.0 + expected64[i]).epsilon(1e-12));

  // A transposed output (BLAS writes row-major only: computed in scratch, copied back).
  std::vector<double> out_transposed(m * n, 2.0);
  cpu().matmul(view(out_transposed, {m, n}, {1, m}), view(wide, {m, k}, {2 * k, 2}),
               view(b64, {k, n}), true);
  for (std::int64_t i = 0; i < m; ++i)
    for (std::int64_t j = 0; j < n; ++j)
      CHECK(out_transposed[j * m + i] ==
            doctest::Approx(2.0 + expected64[i * n + j]).epsilon(1e-12));

  // Batches: a is 3 x m x k, b one k x n matrix broadcast over the batch (stride 0), and a
  // 2 x 3 batch grid where a broadcasts over the first batch dim.
  std::vector<double> a_batch = sample_values<double>(3 * m * k, 5), out_batch(2 * 3 * m * n);
  cpu().matmul(view(out_batch, {2, 3, m, n}), view(a_batch, {2, 3, m, k}, {0, m * k, k, 1}),
               view(b64, {2, 3, k, n}, {0, 0, n, 1}), false);
  const auto expected_batch = naive_matmul(
      6, m, n, k,
      [&](auto batch, auto i, auto p) { return a_batch[(batch % 3) * m * k + i * k + p]; },
      [&](auto, auto p, auto j) { return b64[p * n + j]; });
  for (std::size_t i = 0; i < out_batch.size(); ++i)
    CHECK(out_batch[i] == doctest::Approx(expected_batch[i]).epsilon(1e-12));

  // k = 0 gives zeros (or leaves out alone when accumulating); m = 0 does nothing.
  std::vector<float> empty, zeros_out(m * n, 3.0f);
  cpu().matmul(view(zeros_out, {m, n}), view(empty, {m, 0}), view(empty, {0, n}), true);
  CHECK(zeros_out == std::vector<float>(m * n, 3.0f));
  cpu().matmul(view(zeros_out, {m, n}), view(empty, {m, 0}), view(empty, {0, n}), false);
  CHECK(zeros_out == std::vector<float>(m * n, 0.0f));
  cpu().matmul(view(empty, {0, n}), view(empty, {0, k}), view(b_data, {k, n}), false);
  std::vector<std::int64_t> integers(4);
  CHECK_THROWS_AS(
      cpu().matmul(view(integers, {2, 2}), view(integers, {2, 2}), view(integers, {2, 2}), false),
      normgrad::Error);
}

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

TEST_CASE("cpu index_select and gather") {
  std::vector<float> in{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11};  // 3x4
  std::vector<std::int64_t> index_storage{2, -1, 0, -1, 2};     // a strided index: {2, 0, 2}
  const TensorRef index = view(index_storage, {3}, {2});
  std::vector<float> rows(12);
  cpu().index_select(view(rows, {3, 4}), view(in, {3, 4}), 0, index);
  CHECK(rows == std::vector<float>{8, 9, 10, 11, 0, 1, 2, 3, 8, 9, 10, 11});
  std::vector<float> columns(9);
  cpu().index_select(view(columns, {3, 3}), view(in, {3, 4}), 1, index);
  CHECK(columns == std::vector<float>{2, 0, 2, 6, 4, 6, 10, 8, 10});
  // out[i][j] = in[i][g[i][j]] along dim 1; then along dim 0 of the transposed input.
  std::vector<std::int64_t> g{3, 0, 1, 1, 2, 2};
  std::vector<float> gathered(6);
  cpu().gather(view(gathered, {3, 2}), view(in, {3, 4}), 1, view(g, {3, 2}));
  CHECK(gathered == std::vector<float>{3, 0, 5, 5, 10, 10});
  std::vector<std::int64_t> g0{2, 0, 1};
  cpu().gather(view(gathered, {1, 3}), view(in, {4, 3}, {1, 4}), 0, view(g0, {1, 3}));
  CHECK(std::vector<float>(gathered.begin(), gathered.begin() + 3) == std::vector<float>{2, 4, 9});
}

TEST_CASE("cpu index_add and scatter_add add repeated indices in order, for any thread count") {
  std::vector<double> out(8, 0.0);  // 4x2
  std::vector<std::int64_t> index{1, 3, 1, 1};
  std::vector<double> src{1, 2, 3, 4, 5, 6, 7, 8};  // 4x2
  cpu().index_add(view(out, {4, 2}), 0, view(index, {4}), view(src, {4, 2}));
  CHECK(out == std::vector<double>{0, 0, 13, 16, 0, 0, 3, 4});

  std::vector<double> scattered(6, 0.0);                      // 2x3, along dim 1
  std::vector<std::int64_t> targets{2, 0, 2, 2, 1, 1, 1, 1};  // 2x4
  cpu().scatter_add(view(scattered, {2, 3}), 1, view(targets, {2, 4}), view(src, {2, 4}));
  CHECK(scattered == std::vector<double>{2, 0, 1 + 3 + 4, 0, 5 + 6 + 7 + 8, 0});

  // Large float32 runs with many collisions: bit-identical to the naive in-order loop with
  // 1 and 2 threads (float addition is not associative, so any reordering would show).
  const std::int64_t entries = 20000, width = 64, targets_count = 37;
  std::vector<float> values = sample_values<float>(entries * width, 21);
  std::vector<std::int64_t> positions(entries);
  for (std::int64_t i = 0; i < entries; ++i) positions[i] = (i * 7919) % targets_count;
  std::vector<float> naive(targets_count * width, 0.0f);
  for (std::int64_t i = 0; i < entries; ++i)
    for (std::int64_t j = 0; j < width; ++j)
      naive[positions[i] * width + j] += values[i * width + j];
  for (int threads : {1, 2}) {
    std::vector<float> result(targets_count * width, 0.0f);
    with_threads(threads, [&] {
      cpu().index_add(view(result, {targets_count, width}), 0, view(positions, {entries}),
                      view(values, {entries, width}));
    });
    CHECK(result == naive);
  }
  // The same along dim 0 with scatter_add: index has src's shape, every column the same targets.
  std::vector<std::int64_t> scatter_index(entries * width);
  for (std::int64_t i = 0; i < entries; ++i)
    for (std::int64_t j = 0; j < width; ++j) scatter_index[i * width + j] = positions[i];
  for (int threads : {1, 2}) {
    std::vector<float> result(targets_count * width, 0.0f);
    with_threads(threads, [&] {
      cpu().scatter_add(view(result, {targets_count, width}), 0,
                        view(scatter_index, {entries, width}), view(values, {entries, width}));
    });
    CHECK(result == naive);
  }
}

TEST_CASE("cpu kernels refuse what they cannot do with normgrad::Error") {
  std::vector<float> data(1);
  const Shape too_many_dims(17, 2);
  std::vector<float> big(1 << 17);
  CHECK_THROWS_WITH(cpu().fill(view(big, too_many_dims), 0.0), doctest::Contains("dims"));
  std::vector<std::int64_t> integers(1);
  CHECK_THROWS_WITH(cpu().softmax_backward(view(integers, {1}), view(integers, {1}),
                                           view(integers, {1}), 0, true),
                    doctest::Contains("cpu softmax_backward"));
  CHECK_THROWS_AS(cpu().unary(UnaryOp::Neg, view(data, {1}), view(integers, {1}), 0, 0),
                  normgrad::Error);
}

// ---- the vectorised float32 exp, sigmoid and tanh, and the softmax rows built on them --------

namespace {

using backend::cpu::VectorPath;

// |got - exact| in units of the float spacing at `exact` (2^-149 below FLT_MIN, so results that
// underflow are measured in denormal ulps); 0 or infinity where a value is not finite.
double ulp_error(float got, double exact) {
  if (std::isnan(exact)) return std::isnan(got) ? 0.0 : HUGE_VAL;
  const float rounded = static_cast<float>(exact);
  if (std::isinf(rounded) || std::isinf(got)) return got == rounded ? 0.0 : HUGE_VAL;
  const int exponent = exact == 0 ? -126 : std::max(std::ilogb(exact), -126);
  return std::fabs(static_cast<double>(got) - exact) / std::ldexp(1.0, exponent - 23);
}

float float_from_bits(std::uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, sizeof value);
  return value;
}

// Ascending inputs: a sweep of [-104, 89] (past both ends of exp's finite, nonzero range), then
// consecutive floats near -0.2 and 0.3, where neighbouring inputs are closer than an ulp of
// the output apart and a careless evaluation stops being monotone.
std::vector<std::vector<float>> ascending_inputs() {
  std::vector<float> sweep, negative, positive;
  const int steps = 1 << 20;
  for (int i = 0; i <= steps; ++i) sweep.push_back(static_cast<float>(-104.0 + 193.0 * i / steps));
  for (float x = -0.2f; negative.size() < (1u << 18); x = std::nextafter(x, 1.0f))
    negative.push_back(x);
  for (float x = 0.3f; positive.size() < (1u << 18); x = std::nextafter(x, 1.0f))
    positive.push_back(x);
  return {sweep, negative, positive};
}

}  // namespace

TEST_CASE("cpu vector exp, sigmoid and tanh: ulp bounds, monotone, special values, both paths") {
  std::vector<VectorPath> paths{VectorPath::Portable};
  if (backend::cpu::avx2_exp_available()) paths.push_back(VectorPath::Avx2Fma);
  if (backend::cpu::avx2_exp_available())
    MESSAGE("AVX2+FMA available: both paths tested");
  else
    MESSAGE("no AVX2+FMA on this CPU: portable path only");
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const std::vector<float> special{0.0f,    -0.0f,   inf,     -inf,    nan,     88.72f,
                                   88.73f,  -87.3f,  -103.9f, -104.f,  1000.f,  -1000.f,
                                   1e-30f,  -1e-30f, 0.625f,  -0.625f, 0.6249f, 9.0f,
                                   -100.0f, -88.03f, -88.04f, 1e-45f,  -1e-45f};
  std::vector<std::vector<float>> inputs = ascending_inputs();
  inputs.push_back(special);
  std::vector<float> random_bits(1 << 18);  // every kind of float: NaN, inf, denormal, huge
  for (std::size_t i = 0; i < random_bits.size(); ++i)
    random_bits[i] = float_from_bits(philox::random_words(5, i).w[0]);
  inputs.push_back(random_bits);

  struct Function {
    const char* name;
    void (*row)(float*, const float*, std::int64_t, VectorPath);
    double (*reference)(double);
    double bound;  // the largest error measured over every float32 input, rounded up
  };
  const Function functions[] = {
      {"exp", backend::cpu::exp_row, [](double x) { return std::exp(x); }, 1.02},
      {"sigmoid", backend::cpu::sigmoid_row, [](double x) { return 1 / (1 + std::exp(-x)); }, 2.5},
      {"tanh", backend::cpu::tanh_row, [](double x) { return std::tanh(x); }, 1.4},
  };
  for (const Function& function : functions)
    for (VectorPath path : paths) {
      const bool vector = path == VectorPath::Avx2Fma;
      INFO(function.name, vector ? " (AVX2+FMA)" : " (portable)");
      for (std::size_t set = 0; set < inputs.size(); ++set) {
        const std::vector<float>& x = inputs[set];
        std::vector<float> y(x.size());
        function.row(y.data(), x.data(), static_cast<std::int64_t>(x.size()), path);
        double worst = 0;
        float worst_x = 0;
        bool monotone = true;
        for (std::size_t i = 0; i < x.size(); ++i) {
          const double error = ulp_error(y[i], function.reference(x[i]));
          if (error > worst) {
            worst = error;
            worst_x = x[i];
          }
          if (i > 0 && y[i] < y[i - 1]) monotone = false;
        }
        INFO("input set ", set, ", worst at x = ", worst_x);
        // The portable path is the platform's libm (std::tanh is not ours to bound).
        if (vector || function.row != backend::cpu::tanh_row) CHECK(worst <= function.bound);
        if (vector && set < 3) CHECK(monotone);  // the ascending sets, for our kernels
      }
    }

  if (backend::cpu::avx2_exp_available()) {
    // The kernel computes exactly what the scalar statement of its math does.
    for (const std::vector<float>& x : inputs) {
      std::vector<float> y(x.size());
      backend::cpu::exp_row(y.data(), x.data(), static_cast<std::int64_t>(x.size()),
                            VectorPath::Avx2Fma);
      bool identical = true;
      for (std::size_t i = 0; i < x.size(); ++i) {
        const float model = backend::cpu::exp_float_model(x[i]);
        identical = identical &&
                    (std::isnan(model) ? std::isnan(y[i]) : std::memcmp(&model, &y[i], 4) == 0);
      }
      CHECK(identical);
    }
  }

  // The edges, exactly, on every path.
  for (VectorPath path : paths) {
    const auto apply = [path](void (*row)(float*, const float*, std::int64_t, VectorPath),
                              float x) {
      float y = 0;
      row(&y, &x, 1, path);
      return y;
    };
    const auto exp = [&](float x) { return apply(backend::cpu::exp_row, x); };
    const auto sigmoid = [&](float x) { return apply(backend::cpu::sigmoid_row, x); };
    const auto tanh = [&](float x) { return apply(backend::cpu::tanh_row, x); };
    CHECK(exp(0.0f) == 1.0f);
    CHECK(exp(-0.0f) == 1.0f);
    CHECK(exp(inf) == inf);
    CHECK(exp(-inf) == 0.0f);
    CHECK(std::isnan(exp(nan)));
    CHECK(std::isfinite(exp(88.72f)));
    CHECK(exp(88.73f) == inf);
    CHECK(exp(-103.9f) == std::numeric_limits<float>::denorm_min());  // gradual underflow
    CHECK(exp(-104.0f) == 0.0f);
    CHECK(sigmoid(-0.0f) == 0.5f);
    CHECK(sigmoid(inf) == 1.0f);
    CHECK(sigmoid(1000.0f) == 1.0f);
    CHECK(sigmoid(-inf) == 0.0f);
    CHECK(sigmoid(-1000.0f) == 0.0f);
    CHECK(sigmoid(-100.0f) > 0.0f);  // e^-100, a denormal, not 1 / (1 + inf)
    CHECK(std::isnan(sigmoid(nan)));
    CHECK(tanh(1e-30f) == 1e-30f);
    CHECK(std::signbit(tanh(-0.0f)));
    CHECK(tanh(inf) == 1.0f);
    CHECK(tanh(-1000.0f) == -1.0f);
    CHECK(std::isnan(tanh(nan)));
  }
}

TEST_CASE("cpu vector exp rows: any length and position, in place, through unary, any threads") {
  const std::vector<float> x = sample_values<float>(300 * 517, 31);
  std::vector<float> whole(x.size());
  backend::cpu::exp_row(whole.data(), x.data(), static_cast<std::int64_t>(x.size()));
  // Every length 1..17 from every offset 0..8: the padded tail computes what the body does.
  // Values in [-120, 120) mix, within one vector, lanes whose results are normal with lanes
  // that overflow or underflow, which the kernel handles on a slower path.
  std::vector<float> wide(x.begin(), x.begin() + 64), wide_whole(64);
  for (float& v : wide) v *= 120;
  backend::cpu::exp_row(wide_whole.data(), wide.data(), 64);
  bool same = true;
  for (std::int64_t count = 1; count <= 17; ++count)
    for (std::int64_t offset = 0; offset <= 8; ++offset) {
      std::vector<float> part(count), wide_part(count);
      backend::cpu::exp_row(part.data(), x.data() + offset, count);
      backend::cpu::exp_row(wide_part.data(), wide.data() + offset, count);
      for (std::int64_t i = 0; i < count; ++i)
        same = same && part[i] == whole[offset + i] && wide_part[i] == wide_whole[offset + i];
    }
  CHECK(same);
  std::vector<float> in_place(x.begin(), x.begin() + 1001);
  backend::cpu::exp_row(in_place.data(), in_place.data(), 1001);
  CHECK(std::equal(in_place.begin(), in_place.end(), whole.begin()));

  // Through the backend, contiguous, split over 1 or 2 threads: the same bits.
  std::vector<float> input = x;
  for (int threads : {1, 2}) {
    std::vector<float> out(x.size());
    with_threads(threads, [&] {
      cpu().unary(UnaryOp::Exp, view(out, {300, 517}), view(input, {300, 517}), 0, 0);
    });
    CHECK(out == whole);
  }
  // Odd lengths through unary: sigmoid and tanh against double.
  for (std::int64_t n : {1, 7, 33, 1000, 4097}) {
    std::vector<float> values(x.begin(), x.begin() + n), sig(n), th(n);
    for (float& v : values) v *= 12;
    cpu().unary(UnaryOp::Sigmoid, view(sig, {n}), view(values, {n}), 0, 0);
    cpu().unary(UnaryOp::Tanh, view(th, {n}), view(values, {n}), 0, 0);
    double worst_sigmoid = 0, worst_tanh = 0;
    for (std::int64_t i = 0; i < n; ++i) {
      worst_sigmoid =
          std::max(worst_sigmoid, ulp_error(sig[i], 1 / (1 + std::exp(-double(values[i])))));
      worst_tanh = std::max(worst_tanh, ulp_error(th[i], std::tanh(double(values[i]))));
    }
    CHECK(worst_sigmoid <= 2.5);
    CHECK(worst_tanh <= 2.0);  // 1.4 for the AVX2 kernel; the bound here also covers libm's
  }

  // The softmax steps. The row max, on every path, with the max, a NaN or only -inf anywhere.
  std::vector<VectorPath> paths{VectorPath::Portable};
  if (backend::cpu::avx2_exp_available()) paths.push_back(VectorPath::Avx2Fma);
  for (VectorPath path : paths)
    for (std::int64_t n : {1, 7, 31, 32, 33, 100, 1000}) {
      bool max_ok = true;
      for (std::int64_t at = 0; at < n; at += std::max<std::int64_t>(1, n / 13)) {
        std::vector<float> row(x.begin(), x.begin() + n);
        row[at] = 2;  // sample_values lie in [-1, 1)
        max_ok = max_ok && backend::cpu::max_row(row.data(), n, path) == 2.0f;
        row[at] = std::numeric_limits<float>::quiet_NaN();
        max_ok = max_ok && std::isnan(backend::cpu::max_row(row.data(), n, path));
      }
      std::vector<float> minus_inf(n, -std::numeric_limits<float>::infinity());
      max_ok = max_ok && backend::cpu::max_row(minus_inf.data(), n, path) == minus_inf[0];
      CHECK(max_ok);
    }
  // The sum of exp(x - shift) in double, out written or not, on every path.
  for (VectorPath path : paths)
    for (std::int64_t n : {1, 7, 33, 1000, 4097}) {
      std::vector<float> out(n);
      const float shift = 0.75f;
      const double sum = backend::cpu::exp_shifted_sum_row(out.data(), x.data(), n, shift, path);
      CHECK(backend::cpu::exp_shifted_sum_row(nullptr, x.data(), n, shift, path) == sum);
      double reference = 0;
      bool values_match = true;
      for (std::int64_t i = 0; i < n; ++i) {
        const float shifted = x[i] - shift;
        reference += std::exp(double(shifted));
        values_match = values_match && ulp_error(out[i], std::exp(double(shifted))) <= 1.02;
      }
      CHECK(values_match);
      CHECK(sum == doctest::Approx(reference).epsilon(2.1 * std::ldexp(1.0, -23)));
    }
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
