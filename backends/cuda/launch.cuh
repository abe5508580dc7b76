#pragma once
// What the .cu files share: grid sizes, strided element addressing inside kernels, and sums
// over a warp or a block in a fixed order (so that every run adds in the same order and gives
// bit-identical results).

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <initializer_list>

#include "backends/backend.h"
#include "backends/cuda/context.h"
#include "backends/cuda/cuda_check.h"
#include "base/error.h"

namespace normgrad::backend::cuda {

constexpr int threads_per_block = 256;
constexpr int warp_size = 32;

// Blocks for n work items of `threads` each, capped at a few waves over the device's
// multiprocessors: kernels loop over the rest (grid-stride loops).
inline unsigned grid_for(std::int64_t n, const Context& context, int threads = threads_per_block) {
  const std::int64_t blocks = (n + threads - 1) / threads;
  const std::int64_t cap = std::int64_t{context.multiprocessors} * 16;
  return static_cast<unsigned>(std::clamp<std::int64_t>(blocks, 1, cap));
}

// Grid-stride loop over [0, n) for the calling thread.
#define NG_KERNEL_LOOP(i, n)                                                          \
  for (std::int64_t i = blockIdx.x * std::int64_t{blockDim.x} + threadIdx.x; i < (n); \
       i += std::int64_t{gridDim.x} * blockDim.x)

// ---- strided addressing ----------------------------------------------------------------------

constexpr int max_rank = 10;

// The element offset (in elements) of a strided view at a row-major linear index. Passed to
// kernels by value.
struct Indexer {
  int rank = 0;
  std::int64_t sizes[max_rank] = {};
  std::int64_t strides[max_rank] = {};

  __host__ __device__ std::int64_t offset(std::int64_t linear) const {
    std::int64_t result = 0;
    for (int d = rank - 1; d > 0; --d) {
      const std::int64_t size = sizes[d];
      result += (linear % size) * strides[d];
      linear /= size;
    }
    return rank > 0 ? result + linear * strides[0] : 0;
  }
};

inline bool is_contiguous(const TensorRef& ref) {
  std::int64_t expected = 1;
  for (std::int64_t d = ref.rank() - 1; d >= 0; --d) {
    if (ref.shape[d] != 1 && ref.strides[d] != expected) return false;
    expected *= ref.shape[d];
  }
  return true;
}

// Indexers for operands of one shape (out, a, b, ...), simplified together: dims of size 1
// are dropped, and a dim is merged into the one before it when it is contiguous with it in
// every operand. An elementwise kernel over a transposed view then divides once or twice per
// element instead of once per dim. Throws when more than max_rank dims remain.
template <std::size_t N>
void make_indexers(const TensorRef* const (&operands)[N], Indexer (&indexers)[N], const char* op) {
  const TensorRef& first = *operands[0];
  int rank = 0;
  std::int64_t sizes[64];
  std::int64_t strides[N][64];
  NG_CHECK(first.rank() <= 64, op, "rank ", first.rank(), " is above 64");
  for (std::int64_t d = 0; d < first.rank(); ++d) {
    const std::int64_t size = first.shape[d];
    if (size == 1) continue;
    bool merge = rank > 0;
    for (std::size_t k = 0; k < N && merge; ++k)
      merge = strides[k][rank - 1] == operands[k]->strides[d] * size;
    if (merge) {
      sizes[rank - 1] *= size;
      for (std::size_t k = 0; k < N; ++k) strides[k][rank - 1] = operands[k]->strides[d];
    } else {
      sizes[rank] = size;
      for (std::size_t k = 0; k < N; ++k) strides[k][rank] = operands[k]->strides[d];
      ++rank;
    }
  }
  NG_CHECK(rank <= max_rank, op, "a CUDA kernel addresses at most ", max_rank,
           " non-mergeable dims, got ", rank, " for shape ", first.shape);
  for (std::size_t k = 0; k < N; ++k) {
    indexers[k].rank = rank;
    for (int d = 0; d < rank; ++d) {
      indexers[k].sizes[d] = sizes[d];
      indexers[k].strides[d] = strides[k][d];
    }
  }
}

// ---- sums in a fixed order -----------------------------------------------------------------

// The sum over the 32 lanes of a warp, returned to every lane. The butterfly's order depends
// only on the lane numbers, so it is the same on every run.
template <typename T> __device__ __forceinline__ T warp_sum(T value) {
  for (int offset = warp_size / 2; offset > 0; offset /= 2)
    value += __shfl_xor_sync(0xffffffffu, value, offset);
  return value;
}

template <typename T> __device__ __forceinline__ T warp_max(T value) {
  for (int offset = warp_size / 2; offset > 0; offset /= 2) {
    const T other = __shfl_xor_sync(0xffffffffu, value, offset);
    value = (other > value || other != other) ? other : value;  // NaN wins
  }
  return value;
}

// The sum over a block (blockDim.x a multiple of 32, at most 1024), returned to every thread:
// each warp sums its lanes, then every thread sums the warps' results in warp order.
// `shared` holds 32 values; the call contains __syncthreads, so every thread must make it.
template <typename T> __device__ T block_sum(T value, T* shared) {
  const int lane = threadIdx.x % warp_size, warp = threadIdx.x / warp_size;
  value = warp_sum(value);
  __syncthreads();  // `shared` may still be read by a previous call
  if (lane == 0) shared[warp] = value;
  __syncthreads();
  const int warps = blockDim.x / warp_size;
  T total = lane < warps ? shared[lane] : T(0);
  return warp_sum(total);
}

template <typename T> __device__ T block_max(T value, T* shared) {
  const int lane = threadIdx.x % warp_size, warp = threadIdx.x / warp_size;
  value = warp_max(value);
  __syncthreads();
  if (lane == 0) shared[warp] = value;
  __syncthreads();
  const int warps = blockDim.x / warp_size;
  T total = lane < warps ? shared[lane] : shared[0];
  return warp_max(total);
}

}  // namespace normgrad::backend::cuda
