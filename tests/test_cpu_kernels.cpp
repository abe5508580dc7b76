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
#include "cpu_kernel_buffers.h"

using namespace normgrad;
using backend::BinaryOp;
using backend::RandomKind;
using backend::ReduceOp;
using backend::TensorRef;
using backend::UnaryOp;

using namespace testing::cpu_kernels;

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