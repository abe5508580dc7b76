// The fused normalisers on the GPU: LayerNorm and the RMS family (RMSNorm, pRMSNorm, L2Norm)
// over rows [rows, n], contiguous or evenly strided (norm_layout.h), forward and backward
// (backend.h gives the formulas).
//
// Thread mapping. A row belongs to one group of threads: a warp (32 lanes) for short rows, the
// whole block for long ones. Lane l of a group of G threads owns the packs of V adjacent values
// starting at columns (c G + l) V for c = 0, 1, ...: consecutive lanes read consecutive 16-byte
// packs (float4 for float32, two doubles for float64, V = 1 when the row is not a multiple of the
// pack or a pointer is not 16-byte aligned), so every load is coalesced. Each lane keeps its
// packs of the row in registers, so x (and dy) is read from memory once; the passes over the
// row (the mean, then the centred sum of squares; or the backward's row sums, then dx) run over
// those registers. Rows too long for the registers are streamed from memory once per pass.
//
// bfloat16. Rows of bfloat16 are loaded 8 values to a 16-byte pack and computed in float32:
// every "input's type" below is then float32 (the sums, the mean's head and tail, the column
// accumulators, the saved mean and rstd), and each output value is rounded to bfloat16 once as
// it is stored. float32 and float64 compute in their own type.
//
// Sums. Each thread adds its own values in the input's type (at most a few dozen of them), the
// thread sums are converted to double and added across the group by a butterfly of shuffles
// (and across warps through shared memory, in warp order): a fixed order, bit-identical on
// every run. LayerNorm is centred, as on the CPU: mu = x_0 + sum(x - x_0) / n, split into a head
// and a tail in the input's type (mu = head + tail to double precision), and the variance is the
// mean of ((x - head) - tail)^2, never E[x^2] - E[x]^2. Backward recovers the tail from the
// saved head as sum(x - head) / n, in the same pass as its other row sums.
//
// dgain and dbias without atomics. Column form (one gain per column): the rows are cut into
// fixed runs of block_rows rows (the size depends on the row count alone), one run per block.
// Every group adds dy ŷ and dy of its rows into an accumulator row of its own in shared memory,
// each lane only touching the columns it owns, so there are no races and no atomics. At the end
// the block adds its groups' accumulators in group order and writes one partial row per block
// to a Workspace: partial[block][0][n] (dgain) and partial[block][1][n] (dbias). A second
// kernel adds the partial rows in block order, in double. Spatial form (one gain per channel):
// each row's sums of dy ŷ and dy go to a [2][rows] buffer in double, and the second kernel adds,
// per channel c, the rows c, c + channels, ... in order. Either way the result depends on the
// shapes only.

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "backends/cuda/launch.cuh"
#include "backends/cuda/cuda_backend.h"
#include "backends/cuda/device_guard.h"
#include "backends/dtype_dispatch.h"
#include "backends/norm_layout.h"
#include "base/error.h"

namespace normgrad::backend::cuda {

namespace {

constexpr int warp_mode_threads = 128;  // 4 rows at a time, one per warp
constexpr int block_mode_threads = 256;
constexpr int max_chunks = 8;  // packs per thread kept in registers (per operand)

// dgain/dbias partial rows: about this many blocks, each with [min, max] rows; more blocks
// write more partial rows, fewer leave multiprocessors idle or add long runs in float32. The
// longest rows kept in registers (max_chunks packs a thread, a block per row) take a partial
// row of 8192 values and more: a quarter of the blocks there. On an H200 that moved their
// backward from 65% to 71% of copy bandwidth (RMSNorm, 8192 x 8192); 512 blocks gave 70%, 128
// gave 55%; halving the blocks at 16384 x 4096 (4 packs a thread) lost 13 points there.
constexpr std::int64_t target_partial_blocks = 1024, long_row_partial_blocks = 256;
constexpr std::int64_t warp_mode_min_block_rows = 16, warp_mode_max_block_rows = 128;
constexpr std::int64_t block_mode_min_block_rows = 4, block_mode_max_block_rows = 64;

// The second kernel's block: 32 columns by 32 groups of partial rows.
constexpr int finish_groups = 32;

// The type a storage type is computed in: bfloat16 in float32, the others in themselves.
template <typename S> struct ComputeOf { using type = S; };
template <> struct ComputeOf<bfloat16> { using type = float; };
template <typename S> using Compute = typename ComputeOf<S>::type;

// V adjacent values, loaded and stored as one 16-byte access when V = 16 / sizeof(T).
template <typename T, int kVec> struct alignas(sizeof(T) * kVec) Pack { T v[kVec]; };

template <typename T, int kVec> __device__ __forceinline__ Pack<T, kVec> load_pack(const T* p) {
  return *reinterpret_cast<const Pack<T, kVec>*>(p);
}

template <typename T, int kVec>
__device__ __forceinline__ void store_pack(T* p, const Pack<T, kVec>& pack) {
  *reinterpret_cast<Pack<T, kVec>*>(p) = pack;
}

// The threads that share a row: a warp, or the whole block.
template <bool kWarpPerRow> struct RowGroup {
  int lane, size, index, count;  // lane in the group, its size, the group's index, groups
  __device__ RowGroup() {
    if constexpr (kWarpPerRow) {
      lane = static_cast<int>(threadIdx.x) % warp_size;
      size = warp_size;
      index = static_cast<int>(threadIdx.x) / warp_size;
      count = static_cast<int>(blockDim.x) / warp_size;
    } else {
      lane = static_cast<int>(threadIdx.x);
      size = static_cast<int>(blockDim.x);
      index = 0;
      count = 1;
    }
  }
};

// Sums N values over the group, returned to every thread of it, in a fixed order: the warp's
// butterfly, then (block mode) the warps' sums in warp order. `scratch` holds N * 32 doubles.
// In block mode every thread of the block must make the call (it synchronises the block).
template <int N, bool kWarpPerRow>
__device__ __forceinline__ void group_sum(double (&values)[N], double* scratch) {
#pragma unroll
  for (int i = 0; i < N; ++i) values[i] = warp_sum(values[i]);
  if constexpr (!kWarpPerRow) {
    const int lane = static_cast<int>(threadIdx.x) % warp_size;
    const int warp = static_cast<int>(threadIdx.x) / warp_size;
    const int warps = static_cast<int>(blockDim.x) / warp_size;
    __syncthreads();  // the previous call's readers are done with `scratch`
    if (lane == 0) {
#pragma unroll
      for (int i = 0; i < N; ++i) scratch[i * warp_size + warp] = values[i];
    }
    __syncthreads();
#pragma unroll
    for (int i = 0; i < N; ++i)
      values[i] = warp_sum(lane < warps ? scratch[i * warp_size + lane] : 0.0);
  }
}

// S: the stored type of x, y, dy, dx, gain and bias; the statistics and the column partials
// are kept in its compute type.
template <typename S> struct ForwardArgs {
  std::int64_t rows = 0, n = 0, k = 0, channels = 0;
  std::int64_t x_stride = 0, y_stride = 0;  // between rows (backends/norm_layout.h)
  double divisor = 1, eps = 0;
  bool eps_inside_sqrt = true;
  const S* x = nullptr;
  const S* gain = nullptr;
  const S* bias = nullptr;
  S* y = nullptr;
  Compute<S>* mean = nullptr;
  Compute<S>* rstd = nullptr;
};

template <typename S> struct BackwardArgs {
  std::int64_t rows = 0, n = 0, k = 0, channels = 0;
  std::int64_t x_stride = 0, dy_stride = 0, dx_stride = 0;  // between rows
  double divisor = 1, eps = 0;
  bool eps_inside_sqrt = true;
  const S* x = nullptr;
  const S* dy = nullptr;
  const Compute<S>* mean = nullptr;
  const Compute<S>* rstd = nullptr;
  const S* gain = nullptr;
  S* dx = nullptr;
  bool want_gain = false, want_bias = false;
  // Column form with dgain/dbias: block b takes rows [b block_rows, (b + 1) block_rows) and
  // writes column_partial[b][2][n]. 0: rows are spread over the grid, no column partials.
  std::int64_t block_rows = 0;
  Compute<S>* column_partial = nullptr;
  double* row_partial = nullptr;  // spatial form: [2][rows] per-row sums of dy ŷ and dy
};

// ---- forward ----------------------------------------------------------------------------------

// y = g (x - mu) / r + b, mean = mu (its head), rstd = 1 / r, for every row; kChunks packs per
// thread held in registers (0: the row is streamed from memory once per pass).
template <typename S, bool kCentred, int kVec, int kChunks, bool kWarpPerRow>
__global__ void norm_forward_kernel(const ForwardArgs<S> args) {
  using T = Compute<S>;
  using P = Pack<S, kVec>;
  __shared__ double scratch[warp_size];
  const RowGroup<kWarpPerRow> group;
  const std::int64_t n = args.n;
  const std::int64_t stride = std::int64_t{group.size} * kVec;
  const std::int64_t first_column = std::int64_t{group.lane} * kVec;
  const int chunks = kChunks > 0 ? kChunks : static_cast<int>((n + stride - 1) / stride);
  const bool column_gain = args.channels == 0 && args.gain != nullptr;
  const bool column_bias = args.channels == 0 && args.bias != nullptr;

  for (std::int64_t row = blockIdx.x * std::int64_t{group.count} + group.index; row < args.rows;
       row += std::int64_t{gridDim.x} * group.count) {
    const S* x = args.x + row * args.x_stride;
    P cache[kChunks > 0 ? kChunks : 1];
    if constexpr (kChunks > 0) {
#pragma unroll
      for (int c = 0; c < kChunks; ++c) {
        const std::int64_t col = first_column + c * stride;
        if (col < n) cache[c] = load_pack<S, kVec>(x + col);
      }
    }
    const auto values = [&](int c, std::int64_t col) -> P {
      if constexpr (kChunks > 0)
        return cache[c];
      else
        return load_pack<S, kVec>(x + col);
    };

    double mu = 0, inverse_r = 0;
    if constexpr (kCentred) {
      const T shift = static_cast<T>(x[0]);  // sum(x - x_0): exact for values near the row's
      T partial = 0;
#pragma unroll
      for (int c = 0; c < chunks; ++c) {
        const std::int64_t col = first_column + c * stride;
        if (col >= n) continue;
        const P p = values(c, col);
#pragma unroll
        for (int e = 0; e < kVec; ++e) partial += static_cast<T>(p.v[e]) - shift;
      }
      double sum[1] = {static_cast<double>(partial)};
      group_sum<1, kWarpPerRow>(sum, scratch);
      mu = static_cast<double>(shift) + sum[0] / static_cast<double>(n);
      const T head = static_cast<T>(mu);
      const T tail = static_cast<T>(mu - static_cast<double>(head));
      T squares = 0;
#pragma unroll
      for (int c = 0; c < chunks; ++c) {
        const std::int64_t col = first_column + c * stride;
        if (col >= n) continue;
        const P p = values(c, col);
#pragma unroll
        for (int e = 0; e < kVec; ++e) {
          const T deviation = (static_cast<T>(p.v[e]) - head) - tail;
          squares += deviation * deviation;
        }
      }
      sum[0] = static_cast<double>(squares);
      group_sum<1, kWarpPerRow>(sum, scratch);
      inverse_r = 1.0 / sqrt(sum[0] / static_cast<double>(n) + args.eps);
    } else {
      T squares = 0;
      if (args.k == n) {
        // The whole row, under the same condition as the loads: the compiler issues every load
        // of the row before the first sum. (Testing col < k here instead let it move each load
        // down to its own sum, and the row paid the memory's latency once per chunk.)
#pragma unroll
        for (int c = 0; c < chunks; ++c) {
          const std::int64_t col = first_column + c * stride;
          if (col >= n) continue;
          const P p = values(c, col);
#pragma unroll
          for (int e = 0; e < kVec; ++e) {
            const T value = static_cast<T>(p.v[e]);
            squares += value * value;
          }
        }
      } else {
#pragma unroll
        for (int c = 0; c < chunks; ++c) {
          const std::int64_t col = first_column + c * stride;
          if (col >= args.k) continue;  // only the first k values give the statistic
          const P p = values(c, col);
#pragma unroll
          for (int e = 0; e < kVec; ++e) {
            const T value = static_cast<T>(p.v[e]);
            if (col + e < args.k) squares += value * value;
          }
        }
      }
      double sum[1] = {static_cast<double>(squares)};
      group_sum<1, kWarpPerRow>(sum, scratch);
      const double mean_square = sum[0] / args.divisor;
      inverse_r = 1.0 / (args.eps_inside_sqrt ? sqrt(mean_square + args.eps)
                                              : sqrt(mean_square) + args.eps);
    }

    const T head = static_cast<T>(mu);
    const T tail = static_cast<T>(mu - static_cast<double>(head));
    const T scale = static_cast<T>(inverse_r);
    const T row_gain = args.channels > 0 && args.gain != nullptr
                           ? static_cast<T>(args.gain[row % args.channels])
                           : T(1);
    const T row_bias = args.channels > 0 && args.bias != nullptr
                           ? static_cast<T>(args.bias[row % args.channels])
                           : T(0);
    S* y = args.y + row * args.y_stride;
#pragma unroll
    for (int c = 0; c < chunks; ++c) {
      const std::int64_t col = first_column + c * stride;
      if (col >= n) continue;
      const P p = values(c, col);
      P g, b, out;
      if (column_gain) g = load_pack<S, kVec>(args.gain + col);
      if (column_bias) b = load_pack<S, kVec>(args.bias + col);
#pragma unroll
      for (int e = 0; e < kVec; ++e) {
        const T value = static_cast<T>(p.v[e]);
        T normalised;
        if constexpr (kCentred)
          normalised = ((value - head) - tail) * scale;
        else
          normalised = value * scale;
        const T gain_value = column_gain ? static_cast<T>(g.v[e]) : row_gain;
        const T bias_value = column_bias ? static_cast<T>(b.v[e]) : row_bias;
        out.v[e] = static_cast<S>(normalised * gain_value + bias_value);
      }
      store_pack<S, kVec>(y + col, out);
    }
    if (group.lane == 0) {
      args.mean[row] = head;
      args.rstd[row] = scale;
    }
  }
}

// ---- backward ---------------------------------------------------------------------------------

// dx for every row and, per the args, the rows' dgain/dbias contributions (see the file comment).
// Column accumulators live in dynamic shared memory, [group][2][n], or (kChunks = 0, rows too
// long for shared memory) directly in the block's partial row in global memory.
template <typename S, bool kCentred, int kVec, int kChunks, bool kWarpPerRow>
__device__ __forceinline__ void norm_backward_rows(const BackwardArgs<S>& args) {
  using T = Compute<S>;
  using P = Pack<S, kVec>;  // stored values
  using A = Pack<T, kVec>;  // the same columns in the compute type (32 bytes for bfloat16)
  extern __shared__ __align__(32) unsigned char accumulator_bytes[];
  __shared__ double scratch[3 * warp_size];
  const RowGroup<kWarpPerRow> group;
  const std::int64_t n = args.n;
  const std::int64_t stride = std::int64_t{group.size} * kVec;
  const std::int64_t first_column = std::int64_t{group.lane} * kVec;
  const int chunks = kChunks > 0 ? kChunks : static_cast<int>((n + stride - 1) / stride);
  const bool column_gain = args.channels == 0 && args.gain != nullptr;
  const bool column_partials = args.block_rows > 0;  // block-uniform
  const bool row_partials = args.row_partial != nullptr;

  std::int64_t row_begin, row_end, row_step;
  if (column_partials) {
    row_begin = blockIdx.x * args.block_rows + group.index;
    row_end = std::min(args.rows, (blockIdx.x + std::int64_t{1}) * args.block_rows);
    row_step = group.count;
  } else {
    row_begin = blockIdx.x * std::int64_t{group.count} + group.index;
    row_end = args.rows;
    row_step = std::int64_t{gridDim.x} * group.count;
  }

  // This group's accumulator row: [0, n) sums dy ŷ, [n, 2n) sums dy. Each lane zeroes and
  // updates only its own columns, so it needs no synchronisation until the end.
  T* accumulator = nullptr;
  if (column_partials) {
    if constexpr (kChunks > 0)
      accumulator = reinterpret_cast<T*>(accumulator_bytes) + group.index * 2 * n;
    else
      accumulator = args.column_partial + std::int64_t{blockIdx.x} * 2 * n;
    for (int c = 0; c < chunks; ++c) {
      const std::int64_t col = first_column + c * stride;
      if (col >= n) continue;
      const A zero{};
      store_pack<T, kVec>(accumulator + col, zero);
      store_pack<T, kVec>(accumulator + n + col, zero);
    }
  }

  for (std::int64_t row = row_begin; row < row_end; row += row_step) {
    const S* x = args.x + row * args.x_stride;
    const S* dy = args.dy + row * args.dy_stride;
    P x_cache[kChunks > 0 ? kChunks : 1], dy_cache[kChunks > 0 ? kChunks : 1];
    if constexpr (kChunks > 0) {
#pragma unroll
      for (int c = 0; c < kChunks; ++c) {
        const std::int64_t col = first_column + c * stride;
        if (col >= n) continue;
        x_cache[c] = load_pack<S, kVec>(x + col);
        dy_cache[c] = load_pack<S, kVec>(dy + col);
      }
    }
    // The packs in the compute type (a no-op but for bfloat16).
    const auto widen = [](const P& stored) {
      A wide;
#pragma unroll
      for (int e = 0; e < kVec; ++e) wide.v[e] = static_cast<T>(stored.v[e]);
      return wide;
    };
    const auto x_values = [&](int c, std::int64_t col) -> A {
      if constexpr (kChunks > 0)
        return widen(x_cache[c]);
      else
        return widen(load_pack<S, kVec>(x + col));
    };
    const auto dy_values = [&](int c, std::int64_t col) -> A {
      if constexpr (kChunks > 0)
        return widen(dy_cache[c]);
      else
        return widen(load_pack<S, kVec>(dy + col));
    };
    const T row_gain = args.channels > 0 && args.gain != nullptr
                           ? static_cast<T>(args.gain[row % args.channels])
                           : T(1);
    const auto gains = [&](std::int64_t col) -> A {
      A g;
      if (column_gain) {
        g = widen(load_pack<S, kVec>(args.gain + col));
      } else {
#pragma unroll
        for (int e = 0; e < kVec; ++e) g.v[e] = row_gain;
      }
      return g;
    };
    const T inverse_r = args.rstd[row];
    const double count = static_cast<double>(n);

    // The row sums, then the coefficients of dx.
    T head = 0, tail = 0, mean_dyhat = 0, mean_dyhat_yhat = 0, correction = 0;
    if constexpr (kCentred) {
      head = args.mean[row];
      T sum_dyhat = 0, sum_dyhat_deviation = 0, sum_deviation = 0;
#pragma unroll
      for (int c = 0; c < chunks; ++c) {
        const std::int64_t col = first_column + c * stride;
        if (col >= n) continue;
        const A xp = x_values(c, col), dyp = dy_values(c, col), g = gains(col);
#pragma unroll
        for (int e = 0; e < kVec; ++e) {
          const T dyhat = g.v[e] * dyp.v[e];
          const T deviation = xp.v[e] - head;  // exact for x near the mean
          sum_dyhat += dyhat;
          sum_dyhat_deviation += dyhat * deviation;
          sum_deviation += deviation;
        }
      }
      double sums[3] = {static_cast<double>(sum_dyhat), static_cast<double>(sum_dyhat_deviation),
                        static_cast<double>(sum_deviation)};
      group_sum<3, kWarpPerRow>(sums, scratch);
      // The saved mean is the forward's mean rounded to T; this is the rest of it.
      const double rest = sums[2] / count;
      const double sum_dyhat_yhat = (sums[1] - rest * sums[0]) * static_cast<double>(inverse_r);
      tail = static_cast<T>(rest);
      mean_dyhat = static_cast<T>(sums[0] / count);
      mean_dyhat_yhat = static_cast<T>(sum_dyhat_yhat / count);
    } else {
      T partial = 0;
#pragma unroll
      for (int c = 0; c < chunks; ++c) {
        const std::int64_t col = first_column + c * stride;
        if (col >= n) continue;
        const A xp = x_values(c, col), dyp = dy_values(c, col), g = gains(col);
#pragma unroll
        for (int e = 0; e < kVec; ++e) partial += g.v[e] * dyp.v[e] * xp.v[e];
      }
      double sum[1] = {static_cast<double>(partial)};
      group_sum<1, kWarpPerRow>(sum, scratch);
      const double inverse = static_cast<double>(inverse_r);
      double c = 0;
      if (args.eps_inside_sqrt) {
        c = sum[0] * inverse * inverse * inverse / args.divisor;
      } else {
        // rho = sqrt(q) is 0 when the first k values are all 0, where sqrt has no derivative:
        // c = 0 there, as on the CPU, so the gradient keeps its direct term and stays finite.
        const double r = 1.0 / inverse;
        const double rho = r - args.eps;
        if (rho > 0) c = sum[0] / (args.divisor * rho * r * r);
      }
      correction = static_cast<T>(c);
    }

    // dx, and the row's share of dgain and dbias.
    S* dx = args.dx + row * args.dx_stride;
    T gain_sum = 0, bias_sum = 0;
#pragma unroll
    for (int c = 0; c < chunks; ++c) {
      const std::int64_t col = first_column + c * stride;
      if (col >= n) continue;
      const A xp = x_values(c, col), dyp = dy_values(c, col), g = gains(col);
      P out;
      A yhat;
#pragma unroll
      for (int e = 0; e < kVec; ++e) {
        const T dyhat = g.v[e] * dyp.v[e];
        if constexpr (kCentred) {
          yhat.v[e] = ((xp.v[e] - head) - tail) * inverse_r;
          out.v[e] = static_cast<S>((dyhat - mean_dyhat - yhat.v[e] * mean_dyhat_yhat) * inverse_r);
        } else {
          yhat.v[e] = xp.v[e] * inverse_r;
          // values past k do not enter the statistic
          out.v[e] = static_cast<S>(dyhat * inverse_r -
                                    xp.v[e] * (col + e < args.k ? correction : T(0)));
        }
      }
      store_pack<S, kVec>(dx + col, out);
      if (column_partials) {
        if (args.want_gain) {
          A sum = load_pack<T, kVec>(accumulator + col);
#pragma unroll
          for (int e = 0; e < kVec; ++e) sum.v[e] += dyp.v[e] * yhat.v[e];
          store_pack<T, kVec>(accumulator + col, sum);
        }
        if (args.want_bias) {
          A sum = load_pack<T, kVec>(accumulator + n + col);
#pragma unroll
          for (int e = 0; e < kVec; ++e) sum.v[e] += dyp.v[e];
          store_pack<T, kVec>(accumulator + n + col, sum);
        }
      }
      if (row_partials) {
#pragma unroll
        for (int e = 0; e < kVec; ++e) {
          gain_sum += dyp.v[e] * yhat.v[e];
          bias_sum += dyp.v[e];
        }
      }
    }
    if (row_partials) {  // uniform over the grid: every thread of the group makes the call
      double sums[2] = {static_cast<double>(gain_sum), static_cast<double>(bias_sum)};
      group_sum<2, kWarpPerRow>(sums, scratch);
      if (group.lane == 0) {
        args.row_partial[row] = sums[0];
        args.row_partial[args.rows + row] = sums[1];
      }
    }
  }

  // The block's partial row: its groups' accumulators added in group order.
  if constexpr (kChunks > 0) {
    if (column_partials) {
      __syncthreads();
      const T* accumulators = reinterpret_cast<const T*>(accumulator_bytes);
      T* slot = args.column_partial + std::int64_t{blockIdx.x} * 2 * n;
      for (std::int64_t i = threadIdx.x; i < 2 * n; i += blockDim.x) {
        if (i < n ? !args.want_gain : !args.want_bias) continue;
        double sum = 0;
        for (int g = 0; g < group.count; ++g)
          sum += static_cast<double>(accumulators[g * 2 * n + i]);
        slot[i] = static_cast<T>(sum);
      }
    }
  }
}

template <typename S, bool kCentred, int kVec, int kChunks, bool kWarpPerRow>
__global__ void norm_backward_kernel(const BackwardArgs<S> args) {
  norm_backward_rows<S, kCentred, kVec, kChunks, kWarpPerRow>(args);
}

// The longest rows kept in registers (a block per row, max_chunks packs of x and of dy per
// thread) would take about 150 registers a thread, one block per multiprocessor: the whole
// multiprocessor then waits at each row's reduction with no loads in flight. Bounded to two
// blocks, one block's loads overlap the other's reduction and arithmetic.
template <typename S, bool kCentred, int kVec>
__global__ void __launch_bounds__(block_mode_threads, 2)
    norm_backward_long_row_kernel(const BackwardArgs<S> args) {
  norm_backward_rows<S, kCentred, kVec, max_chunks, false>(args);
}

// out[col] = sum over slots s of partial[s stride + col] (entries at or past `limit` skipped),
// in double. Block (32, finish_groups): thread (x, y) adds slots y, y + finish_groups, ... of
// column x, and row y = 0 then adds the groups in order: the same order on every run.
template <typename P, typename T>
__global__ void __launch_bounds__(warp_size* finish_groups)
    sum_partials_kernel(T* out, const P* partial, std::int64_t slots, std::int64_t stride,
                        std::int64_t width, std::int64_t limit) {
  __shared__ double tile[finish_groups][warp_size + 1];
  const std::int64_t col = blockIdx.x * std::int64_t{warp_size} + threadIdx.x;
  double sum = 0;
  if (col < width) {
    for (std::int64_t s = threadIdx.y; s < slots; s += finish_groups) {
      const std::int64_t index = s * stride + col;
      if (index < limit) sum += static_cast<double>(partial[index]);
    }
  }
  tile[threadIdx.y][threadIdx.x] = sum;
  __syncthreads();
  if (threadIdx.y == 0 && col < width) {
    double total = 0;
    for (int g = 0; g < finish_groups; ++g) total += tile[g][threadIdx.x];
    out[col] = static_cast<T>(total);
  }
}

template <typename P, typename T>
void sum_partials(const Context& context, T* out, const P* partial, std::int64_t slots,
                  std::int64_t stride, std::int64_t width, std::int64_t limit) {
  const std::int64_t blocks = (width + warp_size - 1) / warp_size;
  NG_CHECK(blocks <= 0x7fffffff, "cuda norm_backward", "too many columns: ", width);
  sum_partials_kernel<P, T>
      <<<static_cast<unsigned>(blocks), dim3(warp_size, finish_groups), 0, context.stream>>>(
          out, partial, slots, stride, width, limit);
  NG_CUDA_CHECK_LAUNCH();
}

// ---- launch configuration ---------------------------------------------------------------------

struct RowLayout {
  int vec = 1;     // values per pack
  int chunks = 0;  // packs per thread in registers; 0: streamed
  bool warp_per_row = true;
  int threads = warp_mode_threads;
};

bool aligned(const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 16 == 0; }

// 16-byte packs need n, every row stride and every pointer to allow them.
template <typename T>
RowLayout row_layout(std::int64_t n, std::initializer_list<std::int64_t> row_strides,
                     std::initializer_list<const void*> pointers) {
  constexpr int wide = 16 / sizeof(T);
  bool vectorise = n % wide == 0;
  for (const std::int64_t stride : row_strides) vectorise = vectorise && stride % wide == 0;
  for (const void* p : pointers) vectorise = vectorise && (p == nullptr || aligned(p));
  RowLayout layout;
  layout.vec = vectorise ? wide : 1;
  const auto chunks_for = [&](std::int64_t threads) {
    const std::int64_t needed = (n + threads * layout.vec - 1) / (threads * layout.vec);
    int chunks = 1;
    while (chunks < needed) chunks *= 2;
    return needed <= max_chunks ? chunks : 0;
  };
  layout.chunks = chunks_for(warp_size);
  if (layout.chunks == 0) {
    layout.warp_per_row = false;
    layout.threads = block_mode_threads;
    layout.chunks = chunks_for(block_mode_threads);
  }
  return layout;
}

// Calls function(vec, chunks, warp_per_row) with the layout as integral constants.
template <int kVec, typename Function>
void with_layout_vec(const RowLayout& layout, Function&& function) {
  const std::integral_constant<int, kVec> vec;
  if (layout.warp_per_row) {
    const std::true_type warp;
    switch (layout.chunks) {
      case 1:
        return function(vec, std::integral_constant<int, 1>{}, warp);
      case 2:
        return function(vec, std::integral_constant<int, 2>{}, warp);
      case 4:
        return function(vec, std::integral_constant<int, 4>{}, warp);
      default:
        return function(vec, std::integral_constant<int, 8>{}, warp);
    }
  }
  const std::false_type block;
  switch (layout.chunks) {
    case 2:
      return function(vec, std::integral_constant<int, 2>{}, block);
    case 4:
      return function(vec, std::integral_constant<int, 4>{}, block);
    case 8:
      return function(vec, std::integral_constant<int, 8>{}, block);
    default:
      return function(vec, std::integral_constant<int, 0>{}, block);
  }
}

template <typename T, typename Function>
void with_layout_of(const RowLayout& layout, Function&& function) {
  constexpr int wide = 16 / sizeof(T);
  if (layout.vec == wide)
    with_layout_vec<wide>(layout, function);
  else
    with_layout_vec<1>(layout, function);
}

unsigned row_grid(std::int64_t rows, const RowLayout& layout, const Context& context) {
  const std::int64_t rows_per_block = layout.warp_per_row ? layout.threads / warp_size : 1;
  const std::int64_t blocks = (rows + rows_per_block - 1) / rows_per_block;
  const std::int64_t cap = std::int64_t{context.multiprocessors} * 32;
  return static_cast<unsigned>(std::clamp<std::int64_t>(blocks, 1, cap));
}

// Dynamic shared memory that takes the block (with the kernel's static shared memory) above
// 48 KiB must be asked for per kernel.
template <typename Kernel> void allow_shared(Kernel kernel, std::size_t bytes) {
  if (bytes == 0) return;
  cudaFuncAttributes attributes{};
  NG_CUDA_CHECK(cudaFuncGetAttributes(&attributes, kernel));
  if (attributes.sharedSizeBytes + bytes > 48 * 1024)
    NG_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                       static_cast<int>(bytes)));
}

// The few things the op layer cannot have got wrong without a bug of its own.
void check_problem(const NormParams& params, std::int64_t n, const TensorRef& x,
                   std::initializer_list<const TensorRef*> affine, const char* op) {
  const std::int64_t k = params.centred ? n : params.k;
  NG_CHECK(k >= 0 && k <= n, op, "k = ", k, " must lie in [0, ", n, "]");
  NG_CHECK(params.centred || params.divisor > 0, op, "divisor must be positive, got ",
           params.divisor);
  NG_CHECK(params.channels >= 0, op, "channels must be >= 0, got ", params.channels);
  const std::int64_t expected = params.channels > 0 ? params.channels : n;
  for (const TensorRef* operand : affine) {
    if (operand == nullptr) continue;
    NG_CHECK(operand->dtype == x.dtype, op, "gain-shaped operands must be ", x.dtype, ", got ",
             operand->dtype);
    NG_CHECK(operand->numel() == expected, op, "gain-shaped operands need ", expected,
             " values, got ", operand->numel());
    NG_CHECK(is_contiguous(*operand), op, "gain-shaped operands must be contiguous");
  }
}

}  // namespace

void CudaBackend::norm_forward(const NormParams& params, const TensorRef& y, const TensorRef& mean,
                               const TensorRef& rstd, const TensorRef& x, const TensorRef* gain,
                               const TensorRef* bias) {
  DeviceGuard guard(context_.device);
  const Context& context = context_;
  const char* op = "cuda norm_forward";
  NG_CHECK(y.dtype == x.dtype && mean.dtype == compute_dtype(x.dtype) &&
               rstd.dtype == compute_dtype(x.dtype),
           op, "dtypes differ: x ", x.dtype, ", y ", y.dtype, ", mean ", mean.dtype, ", rstd ",
           rstd.dtype);
  for (const TensorRef* operand : {&mean, &rstd})
    NG_CHECK(is_contiguous(*operand), op, "mean and rstd must be contiguous, got strides ",
             operand->strides, " for shape ", operand->shape);
  const std::int64_t n = x.rank() == 0 ? 1 : x.shape.back();
  const std::int64_t rows = n == 0 ? 0 : x.numel() / n;
  check_problem(params, n, x, {gain, bias}, op);
  const std::int64_t x_stride = norm_row_stride(x, rows, n, op, "x");
  const std::int64_t y_stride = norm_row_stride(y, rows, n, op, "y");
  if (rows == 0) return;
  dispatch_floating_or_bfloat16(x.dtype, op, [&](auto tag) {
    using T = typename decltype(tag)::type;  // the stored type
    ForwardArgs<T> args;
    args.rows = rows;
    args.n = n;
    args.k = params.centred ? n : params.k;
    args.channels = params.channels;
    args.divisor = params.divisor;
    args.eps = params.eps;
    args.eps_inside_sqrt = params.eps_inside_sqrt;
    args.x = x.ptr<const T>();
    args.x_stride = x_stride;
    args.gain = gain != nullptr ? gain->ptr<const T>() : nullptr;
    args.bias = bias != nullptr ? bias->ptr<const T>() : nullptr;
    args.y = y.ptr<T>();
    args.y_stride = y_stride;
    args.mean = mean.ptr<Compute<T>>();
    args.rstd = rstd.ptr<Compute<T>>();
    const bool column = params.channels == 0;
    const RowLayout layout =
        row_layout<T>(n, {x_stride, y_stride},
                      {args.x, args.y, column ? args.gain : nullptr, column ? args.bias : nullptr});
    const unsigned grid = row_grid(rows, layout, context);
    with_layout_of<T>(layout, [&](auto vec, auto chunks, auto warp) {
      constexpr int kVec = decltype(vec)::value, kChunks = decltype(chunks)::value;
      constexpr bool kWarp = decltype(warp)::value;
      if (params.centred)
        norm_forward_kernel<T, true, kVec, kChunks, kWarp>
            <<<grid, layout.threads, 0, context.stream>>>(args);
      else
        norm_forward_kernel<T, false, kVec, kChunks, kWarp>
            <<<grid, layout.threads, 0, context.stream>>>(args);
      NG_CUDA_CHECK_LAUNCH();
    });
  });
}

void CudaBackend::norm_backward(const NormParams& params, const TensorRef& dx,
                                const TensorRef* dgain, const TensorRef* dbias, const TensorRef& dy,
                                const TensorRef& x, const TensorRef& mean, const TensorRef& rstd,
                                const TensorRef* gain) {
  DeviceGuard guard(context_.device);
  const Context& context = context_;
  const char* op = "cuda norm_backward";
  NG_CHECK(dx.dtype == x.dtype && dy.dtype == x.dtype && mean.dtype == compute_dtype(x.dtype) &&
               rstd.dtype == compute_dtype(x.dtype),
           op, "dtypes differ: x ", x.dtype, ", dx ", dx.dtype, ", dy ", dy.dtype, ", mean ",
           mean.dtype, ", rstd ", rstd.dtype);
  for (const TensorRef* operand : {&mean, &rstd})
    NG_CHECK(is_contiguous(*operand), op, "mean and rstd must be contiguous, got strides ",
             operand->strides, " for shape ", operand->shape);
  const std::int64_t n = x.rank() == 0 ? 1 : x.shape.back();
  const std::int64_t rows = n == 0 ? 0 : x.numel() / n;
  check_problem(params, n, x, {gain, dgain, dbias}, op);
  const std::int64_t x_stride = norm_row_stride(x, rows, n, op, "x");
  const std::int64_t dy_stride = norm_row_stride(dy, rows, n, op, "dy");
  const std::int64_t dx_stride = norm_row_stride(dx, rows, n, op, "dx");
  dispatch_floating_or_bfloat16(x.dtype, op, [&](auto tag) {
    using T = typename decltype(tag)::type;  // the stored type
    using C = Compute<T>;                    // the statistics' and partial sums' type
    const std::int64_t width = params.channels > 0 ? params.channels : n;
    if (rows == 0) {  // the empty sums are 0
      for (const TensorRef* out : {dgain, dbias})
        if (out != nullptr && width > 0)
          NG_CUDA_CHECK(cudaMemsetAsync(out->data, 0, width * sizeof(T), context.stream));
      return;
    }
    BackwardArgs<T> args;
    args.rows = rows;
    args.n = n;
    args.k = params.centred ? n : params.k;
    args.channels = params.channels;
    args.divisor = params.divisor;
    args.eps = params.eps;
    args.eps_inside_sqrt = params.eps_inside_sqrt;
    args.x = x.ptr<const T>();
    args.dy = dy.ptr<const T>();
    args.x_stride = x_stride;
    args.dy_stride = dy_stride;
    args.dx_stride = dx_stride;
    args.mean = mean.ptr<const C>();
    args.rstd = rstd.ptr<const C>();
    args.gain = gain != nullptr ? gain->ptr<const T>() : nullptr;
    args.dx = dx.ptr<T>();
    args.want_gain = dgain != nullptr;
    args.want_bias = dbias != nullptr;
    const bool column = params.channels == 0;
    const bool partials = args.want_gain || args.want_bias;
    const RowLayout layout =
        row_layout<T>(n, {x_stride, dy_stride, dx_stride},
                      {args.x, args.dy, args.dx, column ? args.gain : nullptr});

    // Column partials: fixed runs of rows per block, sized by the row count alone.
    unsigned grid = row_grid(rows, layout, context);
    std::size_t shared_bytes = 0;
    std::int64_t blocks = 0;
    if (partials && column) {
      const std::int64_t lowest =
          layout.warp_per_row ? warp_mode_min_block_rows : block_mode_min_block_rows;
      const std::int64_t highest =
          layout.warp_per_row ? warp_mode_max_block_rows : block_mode_max_block_rows;
      const bool long_rows = !layout.warp_per_row && layout.chunks == max_chunks;
      const std::int64_t target = long_rows ? long_row_partial_blocks : target_partial_blocks;
      args.block_rows = std::clamp((rows + target - 1) / target, lowest, highest);
      blocks = (rows + args.block_rows - 1) / args.block_rows;
      NG_CHECK(blocks <= 0x7fffffff, op, "too many rows: ", rows);
      grid = static_cast<unsigned>(blocks);
      if (layout.chunks > 0) {
        const int groups = layout.warp_per_row ? layout.threads / warp_size : 1;
        shared_bytes = static_cast<std::size_t>(groups) * 2 * n * sizeof(C);
      }
    }
    Workspace column_partial(context, partials && column ? blocks * 2 * n * sizeof(C) : 0);
    Workspace row_partial(context, partials && !column ? 2 * rows * sizeof(double) : 0);
    args.column_partial = column_partial.as<C>();
    args.row_partial = partials && !column ? row_partial.as<double>() : nullptr;

    with_layout_of<T>(layout, [&](auto vec, auto chunks, auto warp) {
      constexpr int kVec = decltype(vec)::value, kChunks = decltype(chunks)::value;
      constexpr bool kWarp = decltype(warp)::value;
      const auto launch = [&](auto kernel) {
        allow_shared(kernel, shared_bytes);
        kernel<<<grid, layout.threads, shared_bytes, context.stream>>>(args);
        NG_CUDA_CHECK_LAUNCH();
      };
      if constexpr (kChunks == max_chunks && !kWarp) {
        if (params.centred)
          launch(norm_backward_long_row_kernel<T, true, kVec>);
        else
          launch(norm_backward_long_row_kernel<T, false, kVec>);
      } else {
        if (params.centred)
          launch(norm_backward_kernel<T, true, kVec, kChunks, kWarp>);
        else
          launch(norm_backward_kernel<T, false, kVec, kChunks, kWarp>);
      }
    });

    if (!partials) return;
    T* outputs[2] = {dgain != nullptr ? dgain->ptr<T>() : nullptr,
                     dbias != nullptr ? dbias->ptr<T>() : nullptr};
    for (int which = 0; which < 2; ++which) {
      if (outputs[which] == nullptr) continue;
      if (column)
        sum_partials(context, outputs[which], args.column_partial + which * n, blocks, 2 * n, n,
                     blocks * 2 * n);
      else
        sum_partials(context, outputs[which], args.row_partial + which * rows,
                     (rows + params.channels - 1) / params.channels, params.channels,
                     params.channels, rows);
    }
  });
}

}  // namespace normgrad::backend::cuda
