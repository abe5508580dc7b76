#pragma once
// Pairwise reduction of a strided row, the building block of Sum/Max/Min.
//
// Summing n numbers left to right has a worst-case error of order n·eps; splitting the row in
// halves recursively brings it to order log2(n)·eps. As in NumPy, the recursion stops at 128
// elements, where eight interleaved accumulators (which the compiler keeps in vector
// registers) take over. The tree depends on n alone, so the result is the same for any thread
// count; reduce_row_parallel evaluates the same tree's large subtrees on several threads and
// combines them in the same order, which gives bit-identical results.

#include <cstdint>
#include <utility>
#include <vector>

#include "backends/cpu/elementwise_math.h"
#include "backends/cpu/strided_loop.h"

namespace normgrad::backend::cpu {

template <typename T> struct SumCombine {
  static T combine(T a, T b) { return add_values(a, b); }
};
template <typename T> struct MaxCombine {
  static T combine(T a, T b) { return maximum_value(a, b); }
};
template <typename T> struct MinCombine {
  static T combine(T a, T b) { return minimum_value(a, b); }
};

inline constexpr std::int64_t pairwise_block = 128;
// Subtrees at most this large are evaluated whole by one thread in reduce_row_parallel.
inline constexpr std::int64_t parallel_subtree = std::int64_t{1} << 15;

// The split point of a pairwise node of n elements: half, rounded down to a multiple of 8.
inline std::int64_t pairwise_split(std::int64_t n) {
  const std::int64_t half = n / 2;
  return half - half % 8;
}

namespace pairwise_detail {

// The base case: eight interleaved accumulators, kept in registers as named locals (an array
// would live in memory), combined as ((a0 a1)(a2 a3))((a4 a5)(a6 a7)). 8 <= n <= 128.
template <typename Combine, bool unit_stride, typename T>
T reduce_block(const T* x, std::int64_t n, std::int64_t stride) {
  const auto at = [x, stride](std::int64_t i) { return unit_stride ? x[i] : x[i * stride]; };
  T a0 = at(0), a1 = at(1), a2 = at(2), a3 = at(3), a4 = at(4), a5 = at(5), a6 = at(6), a7 = at(7);
  std::int64_t i = 8;
  for (; i + 8 <= n; i += 8) {
    a0 = Combine::combine(a0, at(i));
    a1 = Combine::combine(a1, at(i + 1));
    a2 = Combine::combine(a2, at(i + 2));
    a3 = Combine::combine(a3, at(i + 3));
    a4 = Combine::combine(a4, at(i + 4));
    a5 = Combine::combine(a5, at(i + 5));
    a6 = Combine::combine(a6, at(i + 6));
    a7 = Combine::combine(a7, at(i + 7));
  }
  T result = Combine::combine(Combine::combine(Combine::combine(a0, a1), Combine::combine(a2, a3)),
                              Combine::combine(Combine::combine(a4, a5), Combine::combine(a6, a7)));
  for (; i < n; ++i) result = Combine::combine(result, at(i));
  return result;
}

}  // namespace pairwise_detail

// Reduces x[0], x[stride], ..., x[(n - 1) stride] for n >= 1.
template <typename Combine, typename T>
T reduce_row(const T* x, std::int64_t n, std::int64_t stride) {
  if (n > pairwise_block) {
    // The left half first: memory is then read in ascending order, as prefetchers expect
    // (the order of evaluation of function arguments is unspecified).
    const std::int64_t left = pairwise_split(n);
    const T left_result = reduce_row<Combine>(x, left, stride);
    return Combine::combine(left_result, reduce_row<Combine>(x + left * stride, n - left, stride));
  }
  if (n < 8) {
    T result = x[0];
    for (std::int64_t i = 1; i < n; ++i) result = Combine::combine(result, x[i * stride]);
    return result;
  }
  return stride == 1 ? pairwise_detail::reduce_block<Combine, true>(x, n, stride)
                     : pairwise_detail::reduce_block<Combine, false>(x, n, stride);
}

namespace pairwise_detail {

inline void collect_subtrees(std::int64_t start, std::int64_t n,
                             std::vector<std::pair<std::int64_t, std::int64_t>>& subtrees) {
  if (n <= parallel_subtree) {
    subtrees.emplace_back(start, n);
    return;
  }
  const std::int64_t left = pairwise_split(n);
  collect_subtrees(start, left, subtrees);
  collect_subtrees(start + left, n - left, subtrees);
}

template <typename Combine, typename T>
T combine_subtrees(std::int64_t n, const std::vector<T>& results, std::size_t& next) {
  if (n <= parallel_subtree) return results[next++];
  const std::int64_t left = pairwise_split(n);
  const T left_result = combine_subtrees<Combine>(left, results, next);
  return Combine::combine(left_result, combine_subtrees<Combine>(n - left, results, next));
}

}  // namespace pairwise_detail

// reduce_row, with the subtrees of at most parallel_subtree elements spread over threads.
template <typename Combine, typename T>
T reduce_row_parallel(const T* x, std::int64_t n, std::int64_t stride) {
  if (n <= 2 * parallel_subtree || threads_for(n, 1) <= 1) return reduce_row<Combine>(x, n, stride);
  std::vector<std::pair<std::int64_t, std::int64_t>> subtrees;
  pairwise_detail::collect_subtrees(0, n, subtrees);
  std::vector<T> results(subtrees.size());
  parallel_for(static_cast<std::int64_t>(subtrees.size()), parallel_subtree,
               [&](std::int64_t begin, std::int64_t end) {
                 for (std::int64_t s = begin; s < end; ++s)
                   results[s] = reduce_row<Combine>(x + subtrees[s].first * stride,
                                                    subtrees[s].second, stride);
               });
  std::size_t next = 0;
  return pairwise_detail::combine_subtrees<Combine>(n, results, next);
}

}  // namespace normgrad::backend::cpu
