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