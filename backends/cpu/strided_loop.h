#pragma once
// The one N-d strided iteration that every CPU kernel is built on.
//
// A kernel over N operands of one shape (operand 0 is the output) sees the iteration as a
// sequence of rows: calls kernel(pointers, inner_strides, count, linear_index) where
// pointers[k] is operand k's first element of the row, inner_strides[k] its stride (in
// elements) along the row, and linear_index the position of the row's first element in the
// iteration order. Before iterating, the shape is simplified:
//   1. dims of size 1 are dropped (their strides never matter);
//   2. unless the order must be kept, dims are sorted by the output's stride, largest first,
//      so the output is walked in memory order;
//   3. adjacent dims d, d+1 merge when stride[d] == stride[d+1] * size[d+1] for every operand,
//      so a contiguous tensor of any rank becomes one long row.
// Rows are long, and the row kernels below have a unit-stride path that the compiler
// vectorises and a path for stride-0 (broadcast) operands. Large iterations are split into
// one contiguous range of elements per thread; small ones run inline with no allocation.
// With keep_order, step 2 is skipped and linear_index is the row-major index into the shape.

#include <omp.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <type_traits>

#include "backends/backend.h"
#include "backends/cpu/parallel_cost.h"
#include "base/error.h"

namespace normgrad::backend::cpu {

inline constexpr int max_dims = 16;

struct Operand {
  char* data = nullptr;
  std::int64_t element_size = 0;
  const std::int64_t* strides = nullptr;  // one per dim of the iteration shape, in elements
};

inline Operand operand(const TensorRef& tensor) {
  return {static_cast<char*>(tensor.data), static_cast<std::int64_t>(element_size(tensor.dtype)),
          tensor.strides.data()};
}

template <int N> struct StridedLayout {
  int rank = 0;  // after dropping size-1 dims and merging
  std::int64_t numel = 1;
  std::int64_t sizes[max_dims] = {};
  std::int64_t byte_strides[max_dims][N] = {};
  std::int64_t inner_strides[N] = {};  // element strides of the innermost dim
};

// Builds the simplified layout of `shape` restricted to the dims whose bit is set in
// `dims_mask` (all dims by default).
template <int N>
StridedLayout<N> make_layout(const std::int64_t* shape, int rank,
                             const std::array<Operand, N>& operands, const char* op,
                             bool keep_order = false, std::uint64_t dims_mask = ~0ull) {
  StridedLayout<N> layout;
  int count = 0;
  for (int d = 0; d < rank; ++d) {
    if (d < 64 && !((dims_mask >> d) & 1)) continue;
    layout.numel *= shape[d];
    if (shape[d] == 1) continue;
    NG_CHECK(count < max_dims, op, "tensors with more than ", max_dims,
             " dims of size > 1 are not supported");
    layout.sizes[count] = shape[d];
    for (int k = 0; k < N; ++k) layout.byte_strides[count][k] = operands[k].strides[d];
    ++count;
  }
  if (layout.numel == 0) return layout;
  if (!keep_order) {
    // Stable insertion sort by the output's stride magnitude, largest first.
    for (int i = 1; i < count; ++i) {
      for (int j = i; j > 0; --j) {
        const auto magnitude = [&](int dim) {
          const std::int64_t s = layout.byte_strides[dim][0];
          return s < 0 ? -s : s;
        };
        if (magnitude(j - 1) >= magnitude(j)) break;
        std::swap(layout.sizes[j - 1], layout.sizes[j]);
        for (int k = 0; k < N; ++k)
          std::swap(layout.byte_strides[j - 1][k], layout.byte_strides[j][k]);
      }
    }
  }
  // Merge from the outside in; `merged` counts the dims kept so far, written in place.
  int merged = 0;
  for (int d = 0; d < count; ++d) {
    if (merged > 0) {
      bool contiguous = true;
      const int last = merged - 1;
      for (int k = 0; k < N; ++k)
        contiguous = contiguous &&
                     layout.byte_strides[last][k] == layout.byte_strides[d][k] * layout.sizes[d];
      if (contiguous) {
        layout.sizes[last] *= layout.sizes[d];
        for (int k = 0; k < N; ++k) layout.byte_strides[last][k] = layout.byte_strides[d][k];
        continue;
      }
    }
    layout.sizes[merged] = layout.sizes[d];
    for (int k = 0; k < N; ++k) layout.byte_strides[merged][k] = layout.byte_strides[d][k];
    ++merged;
  }
  layout.rank = merged;
  for (int k = 0; k < N; ++k) {
    if (merged > 0) layout.inner_strides[k] = layout.byte_strides[merged - 1][k];
    for (int d = 0; d < merged; ++d) layout.byte_strides[d][k] *= operands[k].element_size;
  }
  return layout;
}

// Byte offsets of the element with the given linear index, for every operand.
template <int N>
std::array<std::int64_t, N> offsets_of(const StridedLayout<N>& layout, std::int64_t linear) {
  std::array<std::int64_t, N> offsets{};
  for (int d = layout.rank - 1; d >= 0 && linear > 0; --d) {
    const std::int64_t index = linear % layout.sizes[d];
    linear /= layout.sizes[d];
    for (int k = 0; k < N; ++k) offsets[k] += index * layout.byte_strides[d][k];
  }
  return offsets;
}

// Runs the kernel over the elements [begin, end) of the layout, one row piece at a time.
template <int N, typename Kernel>
void walk_range(const StridedLayout<N>& layout,
                const std::type_identity_t<std::array<char*, N>>& base, std::int64_t begin,
                std::int64_t end, Kernel& kernel) {
  if (begin >= end) return;
  std::array<char*, N> pointers = base;
  if (layout.rank == 0) {
    kernel(pointers, layout.inner_strides, std::int64_t{1}, std::int64_t{0});
    return;
  }
  std::int64_t index[max_dims];
  std::int64_t remainder = begin;
  for (int d = layout.rank - 1; d >= 0; --d) {
    index[d] = remainder % layout.sizes[d];
    remainder /= layout.sizes[d];
    for (int k = 0; k < N; ++k) pointers[k] += index[d] * layout.byte_strides[d][k];
  }
  const int inner = layout.rank - 1;
  const std::int64_t row_size = layout.sizes[inner];
  std::int64_t linear = begin;
  while (true) {
    const std::int64_t count = std::min(row_size - index[inner], end - linear);
    kernel(pointers, layout.inner_strides, count, linear);
    linear += count;
    if (linear >= end) return;
    // Back to the start of the row, then carry into the outer dims.
    for (int k = 0; k < N; ++k) pointers[k] -= index[inner] * layout.byte_strides[inner][k];
    index[inner] = 0;
    for (int d = inner - 1; d >= 0; --d) {
      for (int k = 0; k < N; ++k) pointers[k] += layout.byte_strides[d][k];
      if (++index[d] < layout.sizes[d]) break;
      for (int k = 0; k < N; ++k) pointers[k] -= layout.sizes[d] * layout.byte_strides[d][k];
      index[d] = 0;
    }
  }
}

// How many threads `count` items of `cost_per_item` elements of work deserve: none besides the
// caller below the work that starting a region costs (parallel_cost.h), then one for every
// half of that.
inline int threads_for(std::int64_t count, std::int64_t cost_per_item) {
  if (count < 2 || omp_get_max_threads() < 2 || omp_in_parallel()) return 1;
  const std::int64_t work = count * std::max<std::int64_t>(cost_per_item, 1);
  const std::int64_t threshold = parallel_threshold();
  if (work < threshold) return 1;
  const std::int64_t wanted = std::min<std::int64_t>(work / (threshold / 2), count);
  return static_cast<int>(std::min<std::int64_t>(omp_get_max_threads(), wanted));
}

// body(begin, end) over one contiguous range of [0, count) per thread. Which items a thread
// gets never changes what is computed for an item, so results do not depend on the thread count.
template <typename Body>
void parallel_for(std::int64_t count, std::int64_t cost_per_item, Body&& body) {
  const int threads = threads_for(count, cost_per_item);
  if (threads <= 1) {
    if (count > 0) body(std::int64_t{0}, count);
    return;
  }
#pragma omp parallel num_threads(threads)
  {
    const std::int64_t team = omp_get_num_threads();
    const std::int64_t thread = omp_get_thread_num();
    // Boundaries of long ranges are rounded to 64 items, keeping rows aligned for vector loads.
    const bool round = count / team >= 4096;
    const auto boundary = [&](std::int64_t t) {
      if (t == team) return count;
      const std::int64_t split = count * t / team;
      return round ? split & ~std::int64_t{63} : split;
    };
    const std::int64_t begin = boundary(thread);
    const std::int64_t end = boundary(thread + 1);
    if (begin < end) body(begin, end);
  }
}

// Runs the kernel over a whole layout, in parallel when it is large. `cost` is an element's
// work in simple elements (an add's): more for a function that takes several times as long.
template <int N, typename Kernel>
void run_layout(const StridedLayout<N>& layout,
                const std::type_identity_t<std::array<char*, N>>& base, Kernel&& kernel,
                std::int64_t cost = 1) {
  if (layout.numel == 0) return;
  parallel_for(layout.numel, cost, [&](std::int64_t begin, std::int64_t end) {
    walk_range(layout, base, begin, end, kernel);
  });
}

// The common case: N tensors of the output's shape (operand 0), iterated element by element.
template <int N, typename Kernel>
void for_each_element(const std::array<const TensorRef*, N>& tensors, const char* op,
                      Kernel&& kernel, bool keep_order = false, std::int64_t cost = 1) {
  std::array<Operand, N> operands;
  std::array<char*, N> base;
  for (int k = 0; k < N; ++k) {
    operands[k] = operand(*tensors[k]);
    base[k] = operands[k].data;
  }
  const TensorRef& out = *tensors[0];
  const auto layout =
      make_layout<N>(out.shape.data(), static_cast<int>(out.rank()), operands, op, keep_order);
  run_layout(layout, base, kernel, cost);
}

// ---- row kernels ----------------------------------------------------------------------------
// out[i] = f(in[i]) along one row; strides in elements.
template <typename Out, typename In, typename Function>
inline void unary_row(char* out_bytes, const char* in_bytes, std::int64_t out_stride,
                      std::int64_t in_stride, std::int64_t count, Function function) {
  Out* out = reinterpret_cast<Out*>(out_bytes);
  const In* in = reinterpret_cast<const In*>(in_bytes);
  if (out_stride == 1 && in_stride == 1) {
#pragma omp simd
    for (std::int64_t i = 0; i < count; ++i) out[i] = function(in[i]);
  } else if (out_stride == 1 && in_stride == 0) {
    std::fill(out, out + count, static_cast<Out>(function(in[0])));
  } else {
    for (std::int64_t i = 0; i < count; ++i) out[i * out_stride] = function(in[i * in_stride]);
  }
}

// out[i] = f(a[i], b[i]) along one row, with unit-stride and broadcast-operand fast paths.
template <typename Out, typename A, typename B, typename Function>
inline void binary_row(char* out_bytes, const char* a_bytes, const char* b_bytes,
                       const std::int64_t* strides, std::int64_t count, Function function) {
  Out* out = reinterpret_cast<Out*>(out_bytes);
  const A* a = reinterpret_cast<const A*>(a_bytes);
  const B* b = reinterpret_cast<const B*>(b_bytes);
  const std::int64_t so = strides[0], sa = strides[1], sb = strides[2];
  if (so == 1 && sa == 1 && sb == 1) {
#pragma omp simd
    for (std::int64_t i = 0; i < count; ++i) out[i] = function(a[i], b[i]);
  } else if (so == 1 && sa == 1 && sb == 0) {
    const B scalar = b[0];
#pragma omp simd
    for (std::int64_t i = 0; i < count; ++i) out[i] = function(a[i], scalar);
  } else if (so == 1 && sa == 0 && sb == 1) {
    const A scalar = a[0];
#pragma omp simd
    for (std::int64_t i = 0; i < count; ++i) out[i] = function(scalar, b[i]);
  } else {
    for (std::int64_t i = 0; i < count; ++i) out[i * so] = function(a[i * sa], b[i * sb]);
  }
}

}  // namespace normgrad::backend::cpu
