// BatchNorm on the GPU (backend.h gives the contract). x is contiguous [N, C, S]; channel c owns
// the M = N S values x[n, c, s].
//
// Fixed blocks. The samples are cut into blocks whose size depends on the shape alone (as on the
// CPU: at most 64 blocks, at least 32768 values each). One CUDA block reduces one (sample block,
// channel) item and writes its result to a Workspace; a second small kernel then combines, per
// channel, the blocks' results in block order. Inside a CUDA block every thread takes fixed
// values and the threads are combined by a butterfly over the warp and then in warp order, so
// nothing depends on scheduling and there are no atomics.
//
// Statistics. Each thread loads its values eight at a time into registers, takes the mean and
// M2 (sum of squared deviations from that mean) of those eight in double, two passes over the
// registers, so the sums are centred (never E[x^2] - E[x]^2) although x is read once, and merges
// them into its running moments (Chan, Golub & LeVeque):
//   n = n_a + n_b,  d = mean_b - mean_a,  mean = mean_a + d n_b / n,  M2 = M2_a + M2_b + d^2 n_a
//   n_b / n.
// Threads, warps, then sample blocks are merged the same way. variance = M2 / M (biased).
//
// Two layouts, as on the CPU:
//   planes  (S >= 32): the threads of an item walk its (sample, position) values in memory
//           order, coalesced along each map;
//   columns (S < 32, [N, C] input among them): walking down one channel would use one value per
//           memory sector, so a CUDA block takes a tile of up to 32 adjacent columns of the
//           [N, C S] matrix (whole channels), a lane per column and eight rows of threads down
//           the samples; the column moments are merged row by row, then a channel's S columns.
//
// Backward. Per channel, sum(dy) and sum(dy (x - mean)) in double over the same blocks and
// layouts. dx is then elementwise; with x̂ = (x - mean) rstd,
//   dx = a dy + b (x - mean) + k,  a = g rstd,  and
//   training:   b = -a rstd mean(dy x̂),  k = -a mean(dy);  evaluation: b = k = 0.
// The elementwise kernels run in x's type and subtract the mean as a head and a tail of that
// type (mean = head + tail to double precision), as the CPU does.
//
// bfloat16 x (and dy, gain and bias): the reductions read it into double as they read float32;
// the coefficients and the elementwise kernels compute in float32 (compute_t, as the float32
// kernels do) and round each output once, so results are the float32 kernels' on the same
// values, bit for bit.

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <limits>

#include "backends/compute_type.h"
#include "backends/cuda/cuda_backend.h"
#include "backends/cuda/device_guard.h"
#include "backends/cuda/launch.cuh"
#include "backends/dtype_dispatch.h"
#include "base/error.h"

namespace normgrad::backend::cuda {

namespace {

constexpr std::int64_t max_blocks = 64;           // sample blocks, at most
constexpr std::int64_t min_block_values = 32768;  // values of a channel per block, at least
constexpr std::int64_t plane_min_spatial = 32;    // maps this large use the plane layout
constexpr int chunk = 8;                          // values a thread takes at a time
constexpr int column_rows = 8;                    // threads down the samples (columns layout)

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

struct Geometry {
  std::int64_t batch = 0, channels = 0, spatial = 0;
  std::int64_t block_samples = 1, blocks = 0;
  bool planes = false;
  std::int64_t tile_channels = 1;  // columns layout: whole channels per CUDA block
};

Geometry geometry_of(const TensorRef& x) {
  Geometry g;
  g.batch = x.shape[0];
  g.channels = x.shape[1];
  g.spatial = x.shape[2];
  const std::int64_t row = std::max<std::int64_t>(g.channels * g.spatial, 1);
  g.block_samples =
      std::max({ceil_div(g.batch, max_blocks), ceil_div(min_block_values, row), std::int64_t{1}});
  g.blocks = ceil_div(g.batch, g.block_samples);
  g.planes = g.spatial >= plane_min_spatial;
  g.tile_channels = std::max<std::int64_t>(1, warp_size / std::max<std::int64_t>(g.spatial, 1));
  return g;
}

// ---- what the reductions accumulate -----------------------------------------------------------

struct Moments {
  double count = 0, mean = 0, m2 = 0;
};

struct GradSums {
  double dy = 0, dy_centred = 0;  // sum dy, sum dy (x - mean)
};

__device__ __forceinline__ void combine(Moments& a, const Moments& b) {
  if (b.count == 0) return;
  const double count = a.count + b.count;
  const double delta = b.mean - a.mean;
  const double weight = b.count / count;
  a.mean += delta * weight;
  a.m2 += b.m2 + delta * delta * (a.count * weight);
  a.count = count;
}

__device__ __forceinline__ void combine(GradSums& a, const GradSums& b) {
  a.dy += b.dy;
  a.dy_centred += b.dy_centred;
}

__device__ __forceinline__ Moments shuffle_xor(const Moments& m, int offset) {
  return {__shfl_xor_sync(0xffffffffu, m.count, offset),
          __shfl_xor_sync(0xffffffffu, m.mean, offset), __shfl_xor_sync(0xffffffffu, m.m2, offset)};
}

__device__ __forceinline__ GradSums shuffle_xor(const GradSums& s, int offset) {
  return {__shfl_xor_sync(0xffffffffu, s.dy, offset),
          __shfl_xor_sync(0xffffffffu, s.dy_centred, offset)};
}

// The statistics of up to `chunk` values (valid where ok), two passes over registers.
struct StatisticsPolicy {
  using State = Moments;
  template <typename T>
  __device__ static State of_chunk(const T (&x)[chunk], const T (&)[chunk], const bool (&ok)[chunk],
                                   double) {
    double sum = 0, count = 0;
#pragma unroll
    for (int i = 0; i < chunk; ++i)
      if (ok[i]) {
        sum += static_cast<double>(x[i]);
        count += 1;
      }
    if (count == 0) return {};
    const double mean = sum / count;
    double m2 = 0;
#pragma unroll
    for (int i = 0; i < chunk; ++i)
      if (ok[i]) {
        const double deviation = static_cast<double>(x[i]) - mean;
        m2 += deviation * deviation;
      }
    return {count, mean, m2};
  }
};

struct GradPolicy {
  using State = GradSums;
  template <typename T>
  __device__ static State of_chunk(const T (&x)[chunk], const T (&dy)[chunk],
                                   const bool (&ok)[chunk], double mean) {
    State s;
#pragma unroll
    for (int i = 0; i < chunk; ++i)
      if (ok[i]) {
        const double grad = static_cast<double>(dy[i]);
        s.dy += grad;
        s.dy_centred += grad * (static_cast<double>(x[i]) - mean);
      }
    return s;
  }
};

// Every lane's state merged over its warp by a butterfly (a fixed order; lane 0's is used).
template <typename State> __device__ __forceinline__ State warp_combine(State state) {
  for (int offset = warp_size / 2; offset > 0; offset /= 2)
    combine(state, shuffle_xor(state, offset));
  return state;
}

// ---- stage 1: one (sample block, channel) item per CUDA block ---------------------------------

template <typename T> struct ReduceArgs {
  std::int64_t batch = 0, channels = 0, spatial = 0, block_samples = 1, tile_channels = 1;
  const T* x = nullptr;
  const T* dy = nullptr;         // backward only
  const double* mean = nullptr;  // backward only
};

// Planes: grid (C, blocks). The item's values, (sample, position) in memory order, are dealt to
// the threads in turn: thread t takes values t, t + blockDim, ...
template <typename T, typename Policy>
__global__ void planes_kernel(const ReduceArgs<T> args, typename Policy::State* partial) {
  using State = typename Policy::State;
  __shared__ State warp_states[warp_size];
  const std::int64_t c = blockIdx.x, block = blockIdx.y;
  const std::int64_t first = block * args.block_samples;
  const std::int64_t last = std::min(args.batch, first + args.block_samples);
  const std::int64_t S = args.spatial;
  const double mean = args.mean != nullptr ? args.mean[c] : 0.0;
  const std::int64_t step_samples = blockDim.x / S, step_spatial = blockDim.x % S;
  std::int64_t sample = first + threadIdx.x / S, position = threadIdx.x % S;
  State state{};
  while (sample < last) {
    T x[chunk], dy[chunk];
    bool ok[chunk];
#pragma unroll
    for (int i = 0; i < chunk; ++i) {
      ok[i] = sample < last;
      x[i] = T(0);
      dy[i] = T(0);
      if (ok[i]) {
        const std::int64_t offset = (sample * args.channels + c) * S + position;
        x[i] = args.x[offset];
        if (args.dy != nullptr) dy[i] = args.dy[offset];
        sample += step_samples;
        position += step_spatial;
        if (position >= S) {
          position -= S;
          ++sample;
        }
      }
    }
    combine(state, Policy::of_chunk(x, dy, ok, mean));
  }
  state = warp_combine(state);
  const int lane = threadIdx.x % warp_size, warp = threadIdx.x / warp_size;
  if (lane == 0) warp_states[warp] = state;
  __syncthreads();
  if (threadIdx.x == 0) {
    State total{};
    for (int w = 0; w < static_cast<int>(blockDim.x / warp_size); ++w)
      combine(total, warp_states[w]);
    partial[block * args.channels + c] = total;
  }
}

// Columns: grid (channel tiles, blocks), block (32, column_rows). Lane x owns column
// tile * tile_channels * S + x of the [N, C S] matrix; row y takes samples y, y + column_rows, ...
template <typename T, typename Policy>
__global__ void columns_kernel(const ReduceArgs<T> args, typename Policy::State* partial) {
  using State = typename Policy::State;
  __shared__ State states[column_rows][warp_size];
  const std::int64_t S = args.spatial, width = args.channels * S;
  const std::int64_t tile_columns = args.tile_channels * S;
  const std::int64_t column = blockIdx.x * tile_columns + threadIdx.x;
  const bool active = threadIdx.x < tile_columns && column < width;
  const std::int64_t block = blockIdx.y;
  const std::int64_t first = block * args.block_samples;
  const std::int64_t last = std::min(args.batch, first + args.block_samples);
  const double mean = active && args.mean != nullptr ? args.mean[column / S] : 0.0;
  State state{};
  if (active) {
    for (std::int64_t base = first + threadIdx.y; base < last; base += chunk * column_rows) {
      T x[chunk], dy[chunk];
      bool ok[chunk];
#pragma unroll
      for (int i = 0; i < chunk; ++i) {
        const std::int64_t sample = base + std::int64_t{i} * column_rows;
        ok[i] = sample < last;
        x[i] = ok[i] ? args.x[sample * width + column] : T(0);
        dy[i] = ok[i] && args.dy != nullptr ? args.dy[sample * width + column] : T(0);
      }
      combine(state, Policy::of_chunk(x, dy, ok, mean));
    }
  }
  states[threadIdx.y][threadIdx.x] = state;
  __syncthreads();
  if (threadIdx.y == 0 && active) {  // the rows in order
    State total{};
    for (int r = 0; r < column_rows; ++r) combine(total, states[r][threadIdx.x]);
    states[0][threadIdx.x] = total;  // only this thread reads or writes column x of row 0 now
  }
  __syncthreads();
  if (threadIdx.y == 0 && threadIdx.x < args.tile_channels) {  // a channel's columns in order
    const std::int64_t c = blockIdx.x * args.tile_channels + threadIdx.x;
    if (c < args.channels) {
      State total{};
      for (std::int64_t s = 0; s < S; ++s) combine(total, states[0][threadIdx.x * S + s]);
      partial[block * args.channels + c] = total;
    }
  }
}

template <typename T, typename Policy>
void reduce_blocks(const Context& context, const Geometry& g, const ReduceArgs<T>& args,
                   typename Policy::State* partial) {
  if (g.blocks == 0 || g.channels == 0) return;
  if (g.planes) {
    planes_kernel<T, Policy>
        <<<dim3(static_cast<unsigned>(g.channels), static_cast<unsigned>(g.blocks)),
           threads_per_block, 0, context.stream>>>(args, partial);
  } else {
    const std::int64_t tiles = ceil_div(g.channels, g.tile_channels);
    columns_kernel<T, Policy><<<dim3(static_cast<unsigned>(tiles), static_cast<unsigned>(g.blocks)),
                                dim3(warp_size, column_rows), 0, context.stream>>>(args, partial);
  }
  NG_CUDA_CHECK_LAUNCH();
}

// ---- stage 2: per channel, the blocks in order ------------------------------------------------

__global__ void finish_statistics_kernel(std::int64_t channels, std::int64_t blocks,
                                         const Moments* partial, double eps, double* mean,
                                         double* variance, double* rstd) {
  NG_KERNEL_LOOP(c, channels) {
    Moments total;
    for (std::int64_t block = 0; block < blocks; ++block)
      combine(total, partial[block * channels + c]);
    const double var =
        total.count > 0 ? total.m2 / total.count : std::numeric_limits<double>::quiet_NaN();
    mean[c] = total.mean;
    variance[c] = var;
    rstd[c] = 1.0 / sqrt(var + eps);
  }
}

// Per channel: out = a dy + b ((x - head) - tail) + k (the dy term only in backward).
template <typename T> struct ChannelCoefficients {
  T* head;
  T* tail;
  T* a;
  T* b;
  T* k;
};

template <typename T>
ChannelCoefficients<T> coefficients_in(const Workspace& workspace, std::int64_t channels) {
  T* base = workspace.as<T>();
  return {base, base + channels, base + 2 * channels, base + 3 * channels, base + 4 * channels};
}

// gain and bias hold S; the coefficients T = compute_t<S>.
template <typename S, typename T = compute_t<S>>
__global__ void forward_coefficients_kernel(std::int64_t channels, const double* mean,
                                            const double* rstd, const S* gain, const S* bias,
                                            ChannelCoefficients<T> co) {
  NG_KERNEL_LOOP(c, channels) {
    const T head = static_cast<T>(mean[c]);
    co.head[c] = head;
    co.tail[c] = static_cast<T>(mean[c] - static_cast<double>(head));
    const double scale = gain != nullptr ? static_cast<double>(gain[c]) : 1.0;
    co.a[c] = T(0);
    co.b[c] = static_cast<T>(scale * rstd[c]);
    co.k[c] = bias != nullptr ? static_cast<T>(bias[c]) : T(0);
  }
}

template <typename S, typename T = compute_t<S>>
__global__ void backward_coefficients_kernel(std::int64_t channels, std::int64_t blocks,
                                             double count, const GradSums* partial,
                                             const double* mean, const double* rstd, const S* gain,
                                             bool batch_statistics, S* dgain, S* dbias,
                                             ChannelCoefficients<T> co) {
  NG_KERNEL_LOOP(c, channels) {
    GradSums total;
    for (std::int64_t block = 0; block < blocks; ++block)
      combine(total, partial[block * channels + c]);
    const double r = rstd[c];
    const double scale = (gain != nullptr ? static_cast<double>(gain[c]) : 1.0) * r;
    const double sum_dy_yhat = total.dy_centred * r;
    if (dgain != nullptr) dgain[c] = static_cast<S>(static_cast<T>(sum_dy_yhat));
    if (dbias != nullptr) dbias[c] = static_cast<S>(static_cast<T>(total.dy));
    const T head = static_cast<T>(mean[c]);
    co.head[c] = head;
    co.tail[c] = static_cast<T>(mean[c] - static_cast<double>(head));
    co.a[c] = static_cast<T>(scale);
    co.b[c] = batch_statistics ? static_cast<T>(-scale * r * sum_dy_yhat / count) : T(0);
    co.k[c] = batch_statistics ? static_cast<T>(-scale * total.dy / count) : T(0);
  }
}

// ---- elementwise ------------------------------------------------------------------------------

// Rows over gridDim.y, positions over gridDim.x, so no element needs a division: for S = 1 a row
// is a sample and the position its channel; otherwise a row is a (sample, channel) map.
template <typename S, bool kWithDy, typename T = compute_t<S>>
__global__ void channel_affine_kernel(std::int64_t rows, std::int64_t length, std::int64_t channels,
                                      bool position_is_channel, S* out, const S* dy, const S* x,
                                      const ChannelCoefficients<T> co) {
  for (std::int64_t row = blockIdx.y; row < rows; row += gridDim.y) {
    const std::int64_t base = row * length;
    for (std::int64_t i = blockIdx.x * std::int64_t{blockDim.x} + threadIdx.x; i < length;
         i += std::int64_t{gridDim.x} * blockDim.x) {
      const std::int64_t c = position_is_channel ? i : row % channels;
      T value = co.b[c] * ((static_cast<T>(x[base + i]) - co.head[c]) - co.tail[c]) + co.k[c];
      if constexpr (kWithDy) value += co.a[c] * static_cast<T>(dy[base + i]);
      out[base + i] = static_cast<S>(value);
    }
  }
}

template <typename S, bool kWithDy, typename T = compute_t<S>>
void channel_affine(const Context& context, const Geometry& g, S* out, const S* dy, const S* x,
                    const ChannelCoefficients<T>& co) {
  const bool position_is_channel = g.spatial == 1;
  const std::int64_t rows = position_is_channel ? g.batch : g.batch * g.channels;
  const std::int64_t length = position_is_channel ? g.channels : g.spatial;
  if (rows == 0 || length == 0) return;
  const std::int64_t column_blocks =
      std::clamp<std::int64_t>(ceil_div(length, threads_per_block), 1, 64);
  const std::int64_t row_blocks =
      std::clamp<std::int64_t>(std::int64_t{context.multiprocessors} * 16 / column_blocks, 1,
                               std::min<std::int64_t>(rows, 65535));
  channel_affine_kernel<S, kWithDy>
      <<<dim3(static_cast<unsigned>(column_blocks), static_cast<unsigned>(row_blocks)),
         threads_per_block, 0, context.stream>>>(rows, length, g.channels, position_is_channel, out,
                                                 dy, x, co);
  NG_CUDA_CHECK_LAUNCH();
}

// The few things the op layer cannot have got wrong without a bug of its own.
void check_operands(const TensorRef& x, std::initializer_list<const TensorRef*> like_x,
                    std::initializer_list<const TensorRef*> per_channel,
                    std::initializer_list<const TensorRef*> statistics, const char* op) {
  NG_CHECK(x.rank() == 3, op, "expects x as [N, C, S], got ", x.shape);
  NG_CHECK(is_contiguous(x), op, "x must be contiguous");
  NG_CHECK(x.shape[1] <= 0x7fffffff, op, "too many channels: ", x.shape);
  for (const TensorRef* operand : like_x) {
    NG_CHECK(operand->dtype == x.dtype && operand->shape == x.shape && is_contiguous(*operand), op,
             "an operand is ", operand->dtype, " ", operand->shape, ", x is ", x.dtype, " ",
             x.shape, " (both contiguous)");
  }
  const auto check_channels = [&](const TensorRef* operand, DType dtype) {
    if (operand == nullptr) return;
    NG_CHECK(operand->dtype == dtype && operand->numel() == x.shape[1] && is_contiguous(*operand),
             op, "per-channel operands must be contiguous ", dtype, " with ", x.shape[1],
             " values, got ", operand->dtype, " ", operand->shape);
  };
  for (const TensorRef* operand : per_channel) check_channels(operand, x.dtype);
  for (const TensorRef* operand : statistics) check_channels(operand, DType::Float64);
}

}  // namespace

void CudaBackend::batch_norm_statistics(const TensorRef& mean, const TensorRef& variance,
                                        const TensorRef& rstd, const TensorRef& x, double eps) {
  DeviceGuard guard(context_.device);
  const Context& context = context_;
  const char* op = "cuda batch_norm_statistics";
  check_operands(x, {}, {}, {&mean, &variance, &rstd}, op);
  const Geometry g = geometry_of(x);
  if (g.channels == 0) return;
  dispatch_floating_or_bfloat16(x.dtype, op, [&](auto tag) {
    using S = typename decltype(tag)::type;
    Workspace partial(context, g.blocks * g.channels * sizeof(Moments));
    ReduceArgs<S> args{g.batch,         g.channels,       g.spatial, g.block_samples,
                       g.tile_channels, x.ptr<const S>(), nullptr,   nullptr};
    reduce_blocks<S, StatisticsPolicy>(context, g, args, partial.as<Moments>());
    finish_statistics_kernel<<<grid_for(g.channels, context), threads_per_block, 0,
                               context.stream>>>(g.channels, g.blocks, partial.as<Moments>(), eps,
                                                 mean.ptr<double>(), variance.ptr<double>(),
                                                 rstd.ptr<double>());
    NG_CUDA_CHECK_LAUNCH();
  });
}

void CudaBackend::batch_norm_forward(const TensorRef& y, const TensorRef& x, const TensorRef& mean,
                                     const TensorRef& rstd, const TensorRef* gain,
                                     const TensorRef* bias) {
  DeviceGuard guard(context_.device);
  const Context& context = context_;
  const char* op = "cuda batch_norm_forward";
  check_operands(x, {&y}, {gain, bias}, {&mean, &rstd}, op);
  const Geometry g = geometry_of(x);
  if (g.channels == 0) return;
  dispatch_floating_or_bfloat16(x.dtype, op, [&](auto tag) {
    using S = typename decltype(tag)::type;
    using T = compute_t<S>;
    Workspace coefficients(context, 5 * g.channels * sizeof(T));
    const ChannelCoefficients<T> co = coefficients_in<T>(coefficients, g.channels);
    forward_coefficients_kernel<S>
        <<<grid_for(g.channels, context), threads_per_block, 0, context.stream>>>(
            g.channels, mean.ptr<const double>(), rstd.ptr<const double>(),
            gain != nullptr ? gain->ptr<const S>() : nullptr,
            bias != nullptr ? bias->ptr<const S>() : nullptr, co);
    NG_CUDA_CHECK_LAUNCH();
    channel_affine<S, false>(context, g, y.ptr<S>(), nullptr, x.ptr<const S>(), co);
  });
}

void CudaBackend::batch_norm_backward(const TensorRef& dx, const TensorRef* dgain,
                                      const TensorRef* dbias, const TensorRef& dy,
                                      const TensorRef& x, const TensorRef& mean,
                                      const TensorRef& rstd, const TensorRef* gain,
                                      bool batch_statistics) {
  DeviceGuard guard(context_.device);
  const Context& context = context_;
  const char* op = "cuda batch_norm_backward";
  check_operands(x, {&dx, &dy}, {gain, dgain, dbias}, {&mean, &rstd}, op);
  const Geometry g = geometry_of(x);
  if (g.channels == 0) return;
  dispatch_floating_or_bfloat16(x.dtype, op, [&](auto tag) {
    using S = typename decltype(tag)::type;
    using T = compute_t<S>;
    const bool sums = batch_statistics || dgain != nullptr || dbias != nullptr;
    // Without the sums, zero-filled partials (no blocks) give the coefficients of evaluation.
    const std::int64_t blocks = sums ? g.blocks : 0;
    Workspace partial(context, blocks * g.channels * sizeof(GradSums));
    if (sums) {
      ReduceArgs<S> args{
          g.batch,         g.channels,       g.spatial,         g.block_samples,
          g.tile_channels, x.ptr<const S>(), dy.ptr<const S>(), mean.ptr<const double>()};
      reduce_blocks<S, GradPolicy>(context, g, args, partial.as<GradSums>());
    }
    Workspace coefficients(context, 5 * g.channels * sizeof(T));
    const ChannelCoefficients<T> co = coefficients_in<T>(coefficients, g.channels);
    const double count = static_cast<double>(std::max<std::int64_t>(g.batch * g.spatial, 1));
    backward_coefficients_kernel<S>
        <<<grid_for(g.channels, context), threads_per_block, 0, context.stream>>>(
            g.channels, blocks, count, partial.as<GradSums>(), mean.ptr<const double>(),
            rstd.ptr<const double>(), gain != nullptr ? gain->ptr<const S>() : nullptr,
            batch_statistics, dgain != nullptr ? dgain->ptr<S>() : nullptr,
            dbias != nullptr ? dbias->ptr<S>() : nullptr, co);
    NG_CUDA_CHECK_LAUNCH();
    channel_affine<S, true>(context, g, dx.ptr<S>(), dy.ptr<const S>(), x.ptr<const S>(), co);
  });
}

}  // namespace normgrad::backend::cuda
