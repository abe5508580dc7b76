#pragma once
// What the row-block kernels of the fused recurrent steps share (recurrent_normed_gru.cu,
// recurrent_lstm_step.cu): one thread block a row, sums over the block in a fixed order, and the
// column sums that turn each row's products into the norms' gain and bias gradients.

#include <algorithm>
#include <cstdint>

#include "backends/backend.h"
#include "backends/cuda/launch.cuh"

namespace normgrad::backend::cuda {

// N sums over the block, returned to every thread: each warp's butterfly, then the warps' sums
// in warp order. blockDim.x is a multiple of 32; `shared` holds N * 32 doubles; every thread of
// the block must make the call (it contains __syncthreads).
template <int N> __device__ void block_sums(double (&values)[N], double* shared) {
  const int lane = threadIdx.x % warp_size, warp = threadIdx.x / warp_size;
  for (int i = 0; i < N; ++i) values[i] = warp_sum(values[i]);
  __syncthreads();  // the previous call's readers are done with `shared`
  if (lane == 0)
    for (int i = 0; i < N; ++i) shared[i * warp_size + warp] = values[i];
  __syncthreads();
  const int warps = blockDim.x / warp_size;
  for (int i = 0; i < N; ++i)
    values[i] = warp_sum(lane < warps ? shared[i * warp_size + lane] : 0.0);
}

// The gradients of two norms' gains and biases from each row's products, laid out [rows, 2,
// first + second]: dy ŷ then dy, the first norm's columns then the second's. Column i is summed
// over the rows in row order, in double, and rounded once to the gradients' type G; a null
// output is skipped.
template <typename T, typename G>
__global__ void affine_column_sums_kernel(const T* products, std::int64_t rows, std::int64_t first,
                                          std::int64_t second, G* first_gain, G* first_bias,
                                          G* second_gain, G* second_bias) {
  const std::int64_t width = first + second;
  NG_KERNEL_LOOP(column, width) {
    const bool in_first = column < first;
    const std::int64_t index = in_first ? column : column - first;
    G* gain = in_first ? first_gain : second_gain;
    G* bias = in_first ? first_bias : second_bias;
    if (!gain && !bias) continue;  // a norm left out wrote no products for its columns
    double gain_sum = 0, bias_sum = 0;
    for (std::int64_t row = 0; row < rows; ++row) {
      gain_sum += double(products[row * 2 * width + column]);
      bias_sum += double(products[row * 2 * width + width + column]);
    }
    if (gain) gain[index] = G(gain_sum);
    if (bias) bias[index] = G(bias_sum);
  }
}

// Threads per row block: a multiple of 32 near H, at most 256.
inline int row_threads(std::int64_t units) {
  const std::int64_t rounded = (units + warp_size - 1) / warp_size * warp_size;
  return static_cast<int>(std::clamp<std::int64_t>(rounded, warp_size, threads_per_block));
}

// Blocks for `rows` rows: one each, up to the grid's limit (the kernels loop over the rest).
inline unsigned row_blocks(std::int64_t rows) {
  return static_cast<unsigned>(std::clamp<std::int64_t>(rows, 1, 65535));
}

template <typename T> T* optional_data(const TensorRef* operand) {
  return operand ? operand->ptr<T>() : nullptr;
}

}  // namespace normgrad::backend::cuda
