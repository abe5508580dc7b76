#pragma once
// What the op families' CPU kernel cases share (the CPU sections of test_<family>.cpp): the CPU
// backend's kernels called directly through TensorRefs over std::vector buffers, deterministic
// values to fill the buffers with, and a thread count for one call.
//
//   using namespace testing::cpu_kernels;
//   std::vector<float> x = sample_values<float>(6), y(6);
//   cpu().unary(UnaryOp::Exp, view(y, {3, 2}), view(x, {3, 2}, {1, 3}), 0, 0);  // x transposed

#include <omp.h>

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "backends/dispatch.h"
#include "backends/philox.h"

namespace testing::cpu_kernels {

inline normgrad::backend::Backend& cpu() { return normgrad::backend::cpu_backend(); }

// A view of `data` starting at element `offset`; contiguous strides unless given.
template <typename T>
normgrad::backend::TensorRef view(std::vector<T>& data, normgrad::Shape shape,
                                  normgrad::Strides strides = {}, std::int64_t offset = 0) {
  normgrad::backend::TensorRef ref;
  ref.data = data.data() + offset;
  ref.dtype = normgrad::dtype_of_v<T>;
  ref.strides = strides.empty() ? normgrad::contiguous_strides(shape) : strides;
  ref.shape = std::move(shape);
  return ref;
}

// Deterministic test data in [-1, 1).
template <typename T> std::vector<T> sample_values(std::size_t n, std::uint64_t seed = 1) {
  namespace philox = normgrad::philox;
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

}  // namespace testing::cpu_kernels
