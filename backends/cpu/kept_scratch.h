#pragma once
// Scratch memory that a kernel needs on every call. Up to kept_scratch_bytes it is kept per
// thread and purpose between calls, since a fresh allocation would be page-faulted in each time;
// larger needs are allocated in the caller's `fallback` for the call alone, where the page
// faults are small next to the work and nothing holds on to the largest size ever asked for.
//
//   std::vector<float> fallback;  // outlives every use of the pointer
//   float* sums = kept_scratch<float, Purpose::RowSums>(2 * n, fallback);

#include <cstddef>
#include <vector>

namespace normgrad::backend::cpu {

constexpr std::size_t kept_scratch_bytes = std::size_t{4} << 20;

// `size` values of T, uninitialised when kept (they hold the previous call's values).
// `purpose`, any constant, gives each use its own kept buffer; `limit` is the most bytes kept.
template <typename T, auto purpose, std::size_t limit = kept_scratch_bytes>
T* kept_scratch(std::size_t size, std::vector<T>& fallback) {
  if (size * sizeof(T) > limit) {
    fallback.resize(size);
    return fallback.data();
  }
  thread_local std::vector<T> buffer;
  if (buffer.size() < size) buffer.resize(size);
  return buffer.data();
}

}  // namespace normgrad::backend::cpu
