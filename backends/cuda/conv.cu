// The convolution on the GPU: conv2d and its weight gradient (backend.h's contract, bias
// optional), by columns or as an implicit GEMM (the methods at the end choose).
//
// conv2d as an implicit GEMM: y = W X + b with W [O, K] the weight and X [K, N L] the batch's
// im2col columns (backends/implicit_columns.h), where X is never written out. Each block
// computes a 64 x 64 tile of the product (64 output channels by 64 output positions) and walks
// K in steps of 16: it gathers the tile's 16 x 64 slice of X from the image into shared
// memory, beside the 64 x 16 slice of W, and every thread adds 16 products to each of its
// 4 x 4 outputs. The next slices are loaded into registers while the current ones are
// multiplied, so the loads overlap the arithmetic. The tile is then written where the output
// layout [N, O, OH OW] wants it, the bias added on the way: no columns, no product buffer, no
// copy, where the column path (backends/conv_by_columns.cpp) writes all three.
//
// The weight gradient, further down, is the same walk over the other dimension.
//
// Each output is one fused multiply-add chain over k = 0 .. K-1 in order, so results repeat
// bit for bit run after run. They differ from the column path's (cuBLAS sums in its own order)
// within float rounding.
//
// Loads: thread t of 256 reads W's rows o0 + t % 64 at four taps t / 64 + 4 q (W is small and
// stays in cache), and X's column p0 + t % 64 at four taps: consecutive threads read
// consecutive outputs, which for stride 1 are consecutive pixels. Thread (ty, tx) = (t / 16,
// t % 16) computes the outputs (ty + 16 a, tx + 16 b), a, b < 4: a warp reads two distinct
// values of the W slice (broadcasts) and 16 consecutive ones of the X slice per step.
//
// bfloat16 operands are widened as they are loaded, so the slices, the sums and the weight
// gradient's partial sums are float32, and each output is rounded once (compute_type.h): the
// float32 kernels' results on the same values, bit for bit.

#include <algorithm>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "backends/compute_type.h"
#include "backends/conv_by_columns.h"
#include "backends/cuda/cuda_backend.h"
#include "backends/cuda/device_guard.h"
#include "backends/cuda/launch.cuh"
#include "backends/dtype_dispatch.h"
#include "backends/implicit_columns.h"

namespace normgrad::backend::cuda {

namespace {

constexpr int tile_m = 64;  // output channels a block
constexpr int tile_n = 64;  // output positions a block
constexpr int tile_k = 16;  // taps a step
constexpr int threads = 256;
constexpr int loads = tile_m * tile_k / threads;  // values of each slice a thread loads: 4
static_assert(tile_n * tile_k / threads == loads && threads == 16 * 16);

template <typename S, typename Index, typename T = compute_t<S>>
__global__ void __launch_bounds__(threads)
    implicit_conv_kernel(S* y, const S* x, const S* weight, const S* bias, ImplicitColumns<Index> g,
                         Index out_channels, Index taps, Index columns) {
  __shared__ T w_slice[tile_k][tile_m];
  __shared__ T x_slice[tile_k][tile_n];
  const int t = threadIdx.x;
  const Index o0 = Index(blockIdx.y) * tile_m, p0 = Index(blockIdx.x) * tile_n;

  // This thread's loads: W row `load_o`, X column `load_p`, at taps `load_k + 4 q`.
  const Index load_o = o0 + t % tile_m, load_p = p0 + t % tile_n;
  const int load_k = t / tile_m;
  const bool o_inside = load_o < out_channels, p_inside = load_p < columns;
  const typename ImplicitColumns<Index>::Column column = g.column(p_inside ? load_p : Index(0));
  T w_next[loads], x_next[loads];
  const auto load = [&](Index k0) {
#pragma unroll
    for (int q = 0; q < loads; ++q) {
      const Index k = k0 + load_k + 4 * q;
      w_next[q] = o_inside && k < taps ? static_cast<T>(weight[load_o * taps + k]) : T(0);
      const Index at = p_inside && k < taps ? g.offset(k, column) : Index(-1);
      x_next[q] = at >= 0 ? static_cast<T>(x[at]) : T(0);
    }
  };

  const int tx = t % 16, ty = t / 16;
  T sum[4][4] = {};
  load(0);
  for (Index k0 = 0; k0 < taps; k0 += tile_k) {
#pragma unroll
    for (int q = 0; q < loads; ++q) {
      w_slice[load_k + 4 * q][t % tile_m] = w_next[q];
      x_slice[load_k + 4 * q][t % tile_n] = x_next[q];
    }
    __syncthreads();
    if (k0 + tile_k < taps) load(k0 + tile_k);  // in flight while the slices are multiplied
#pragma unroll
    for (int kk = 0; kk < tile_k; ++kk) {
      T w_values[4], x_values[4];
#pragma unroll
      for (int a = 0; a < 4; ++a) w_values[a] = w_slice[kk][ty + 16 * a];
#pragma unroll
      for (int b = 0; b < 4; ++b) x_values[b] = x_slice[kk][tx + 16 * b];
#pragma unroll
      for (int a = 0; a < 4; ++a)
#pragma unroll
        for (int b = 0; b < 4; ++b) sum[a][b] = fma(w_values[a], x_values[b], sum[a][b]);
    }
    __syncthreads();
  }

#pragma unroll
  for (int a = 0; a < 4; ++a) {
    const Index o = o0 + ty + 16 * a;
    if (o >= out_channels) continue;
    const T shift = bias != nullptr ? static_cast<T>(bias[o]) : T(0);
#pragma unroll
    for (int b = 0; b < 4; ++b) {
      const Index p = p0 + tx + 16 * b;
      if (p >= columns) continue;
      const Index sample = p / g.positions, position = p - sample * g.positions;
      y[(sample * out_channels + o) * g.positions + position] = static_cast<S>(sum[a][b] + shift);
    }
  }
}

// The weight gradient dW = dY X^T ([O, K]; dY [O, N L] is dy with its samples side by side)
// walks the N L outputs in steps of 16. Block (bx, by, s) computes the 64 x 64 tile (o0, k0) =
// (64 by, 64 bx) of the sum over split s's share of the outputs, into partial[s]; a second
// kernel adds the splits in order s = 0, 1, ... So each gradient is a fixed chain of
// multiply-adds and then a fixed sum: the same bits run after run.
//
// Loads: thread t reads output p0 + t % 16 of dY's rows o0 + t / 16 + 16 q and of X's rows
// k0 + t / 16 + 16 q, q < 4: sixteen consecutive threads read sixteen consecutive outputs. The
// slices are stored [output][row], each row padded by one value so that those sixteen threads
// write sixteen different banks.
// partial holds T = compute_t<S> (a workspace whenever S is not T).
template <typename S, typename Index, typename T = compute_t<S>>
__global__ void __launch_bounds__(threads)
    implicit_weight_gradient_kernel(T* partial, const S* dy, const S* x, ImplicitColumns<Index> g,
                                    Index out_channels, Index taps, Index columns,
                                    Index split_columns) {
  __shared__ T dy_slice[tile_k][tile_m + 1];
  __shared__ T x_slice[tile_k][tile_n + 1];
  const int t = threadIdx.x;
  const Index o0 = Index(blockIdx.y) * tile_m, k0 = Index(blockIdx.x) * tile_n;
  const Index first = Index(blockIdx.z) * split_columns;
  const Index last = first + split_columns < columns ? first + split_columns : columns;
  const int load_p = t % tile_k, load_row = t / tile_k;
  T dy_next[loads], x_next[loads];
  const auto load = [&](Index p0) {
    const Index p = p0 + load_p;
    const bool inside = p < last;
    const typename ImplicitColumns<Index>::Column column = g.column(inside ? p : Index(0));
    const Index sample = inside ? p / g.positions : Index(0);
    const Index position = inside ? p - sample * g.positions : Index(0);
#pragma unroll
    for (int q = 0; q < loads; ++q) {
      const Index o = o0 + load_row + 16 * q, k = k0 + load_row + 16 * q;
      dy_next[q] = inside && o < out_channels
                       ? static_cast<T>(dy[(sample * out_channels + o) * g.positions + position])
                       : T(0);
      const Index at = inside && k < taps ? g.offset(k, column) : Index(-1);
      x_next[q] = at >= 0 ? static_cast<T>(x[at]) : T(0);
    }
  };

  const int tx = t % 16, ty = t / 16;
  T sum[4][4] = {};
  if (first < last) load(first);
  for (Index p0 = first; p0 < last; p0 += tile_k) {
#pragma unroll
    for (int q = 0; q < loads; ++q) {
      dy_slice[load_p][load_row + 16 * q] = dy_next[q];
      x_slice[load_p][load_row + 16 * q] = x_next[q];
    }
    __syncthreads();
    if (p0 + tile_k < last) load(p0 + tile_k);
#pragma unroll
    for (int pp = 0; pp < tile_k; ++pp) {
      T dy_values[4], x_values[4];
#pragma unroll
      for (int a = 0; a < 4; ++a) dy_values[a] = dy_slice[pp][ty + 16 * a];
#pragma unroll
      for (int b = 0; b < 4; ++b) x_values[b] = x_slice[pp][tx + 16 * b];
#pragma unroll
      for (int a = 0; a < 4; ++a)
#pragma unroll
        for (int b = 0; b < 4; ++b) sum[a][b] = fma(dy_values[a], x_values[b], sum[a][b]);
    }
    __syncthreads();
  }

  T* const out = partial + Index(blockIdx.z) * out_channels * taps;
#pragma unroll
  for (int a = 0; a < 4; ++a) {
    const Index o = o0 + ty + 16 * a;
    if (o >= out_channels) continue;
#pragma unroll
    for (int b = 0; b < 4; ++b) {
      const Index k = k0 + tx + 16 * b;
      if (k < taps) out[o * taps + k] = sum[a][b];
    }
  }
}

// dw[i] = partial[0][i] + partial[1][i] + ..., in that order, rounded once to S.
template <typename S, typename T>
__global__ void add_splits_kernel(S* dw, const T* partial, std::int64_t size, int splits) {
  NG_KERNEL_LOOP(i, size) {
    T total = partial[i];
    for (int s = 1; s < splits; ++s) total += partial[s * size + i];
    dw[i] = static_cast<S>(total);
  }
}

// Splits of the outputs for a weight gradient of `tiles` tiles: enough blocks to fill a large
// GPU a few times over (about 1024), each split a whole number of 16-output steps and at least
// 256 outputs long. Shapes alone decide, so the sums' order is the same on every device.
std::int64_t weight_gradient_splits(std::int64_t tiles, std::int64_t columns) {
  const std::int64_t wanted = (1024 + tiles - 1) / tiles;
  const std::int64_t most = std::max<std::int64_t>(columns / 256, 1);
  return std::clamp<std::int64_t>(wanted, 1, std::min<std::int64_t>(most, 256));
}

constexpr std::int64_t limit = std::numeric_limits<std::int32_t>::max() / 2;

// Both implicit-GEMM entry points' view of a call: the window's output size, the product's
// dimensions, and whether 32-bit offsets reach every element.
struct Plan {
  std::int64_t out_h, out_w, out_channels, taps, columns;
  bool narrow;
};

Plan plan_of(const char* op, const TensorRef& x, const TensorRef& weight, const TensorRef& y,
             const Window2d& window) {
  NG_CHECK(x.rank() == 4 && weight.rank() == 4 && y.rank() == 4, op,
           "expects x [N, C, H, W], weight [O, C, kh, kw] and y [N, O, OH, OW], got ", x.shape,
           ", ", weight.shape, " and ", y.shape);
  NG_CHECK(is_contiguous(x) && is_contiguous(weight) && is_contiguous(y), op,
           "expects contiguous operands");
  Plan plan{};
  plan.out_h = window.output_height(x.shape[2]);
  plan.out_w = window.output_width(x.shape[3]);
  NG_CHECK(y.shape == Shape({x.shape[0], weight.shape[0], plan.out_h, plan.out_w}) &&
               weight.shape[1] == x.shape[1] && weight.shape[2] == window.kernel_h &&
               weight.shape[3] == window.kernel_w,
           op, "x ", x.shape, ", weight ", weight.shape, " and y ", y.shape,
           " do not fit the window");
  plan.out_channels = weight.shape[0];
  plan.taps = x.shape[1] * window.kernel_h * window.kernel_w;
  plan.columns = x.shape[0] * plan.out_h * plan.out_w;
  NG_CHECK((plan.out_channels + tile_m - 1) / tile_m <= 65535 &&
               (std::max(plan.columns, plan.taps) + tile_n - 1) / tile_n <=
                   std::numeric_limits<std::int32_t>::max(),
           op, "too many output channels (", plan.out_channels, "), taps (", plan.taps,
           ") or outputs (", plan.columns, ")");
  // The window arithmetic stays within a few extents of the image.
  const std::int64_t reach = std::max(x.shape[2], x.shape[3]) + window.padding_h +
                             window.padding_w + window.kernel_h * window.dilation_h +
                             window.kernel_w * window.dilation_w +
                             std::max(plan.out_h * window.stride_h, plan.out_w * window.stride_w);
  plan.narrow = x.numel() < limit && y.numel() < limit && weight.numel() < limit &&
                plan.columns + tile_n < limit && plan.taps + tile_n < limit && reach < limit;
  return plan;
}

// Runs `launch` with the offsets' type: std::int32_t when the plan allows it.
template <typename Launch> void with_index(const Plan& plan, Launch&& launch) {
  if (plan.narrow)
    launch(TypeTag<std::int32_t>{});
  else
    launch(TypeTag<std::int64_t>{});
}

void conv2d_implicit_gemm(const Context& context, const TensorRef& y, const TensorRef& x,
                          const TensorRef& weight, const TensorRef* bias, const Window2d& window) {
  const char* const op = "cuda conv2d (implicit GEMM)";
  const Plan plan = plan_of(op, x, weight, y, window);
  NG_CHECK(bias == nullptr || is_contiguous(*bias), op, "expects a contiguous bias");
  if (y.numel() == 0) return;
  const dim3 grid(static_cast<unsigned>((plan.columns + tile_n - 1) / tile_n),
                  static_cast<unsigned>((plan.out_channels + tile_m - 1) / tile_m));
  dispatch_floating_or_bfloat16(x.dtype, op, [&](auto tag) {
    using S = typename decltype(tag)::type;
    const S* shift = bias != nullptr ? bias->ptr<const S>() : nullptr;
    with_index(plan, [&](auto index_tag) {
      using Index = typename decltype(index_tag)::type;
      implicit_conv_kernel<S, Index><<<grid, threads, 0, context.stream>>>(
          y.ptr<S>(), x.ptr<const S>(), weight.ptr<const S>(), shift,
          ImplicitColumns<Index>::of(x.shape, plan.out_h, plan.out_w, window),
          Index(plan.out_channels), Index(plan.taps), Index(plan.columns));
      NG_CUDA_CHECK_LAUNCH();
    });
  });
}

// dW = dY X^T over the outputs split into shares whose 64 x 64 tiles run side by side, the
// shares' partial sums then added in order.
void conv2d_weight_gradient_implicit_gemm(const Context& context, const TensorRef& dw,
                                          const TensorRef& x, const TensorRef& dy,
                                          const Window2d& window) {
  const char* const op = "cuda conv2d weight gradient (implicit GEMM)";
  Plan plan = plan_of(op, x, dw, dy, window);
  if (dw.numel() == 0) return;
  const std::size_t bytes = static_cast<std::size_t>(dw.numel()) * element_size(dw.dtype);
  if (plan.columns == 0) {
    NG_CUDA_CHECK(cudaMemsetAsync(dw.data, 0, bytes, context.stream));  // float zeros: 0 bits
    return;
  }
  // Whole steps of 16 outputs a split, and no split left empty.
  const std::int64_t tiles =
      ((plan.out_channels + tile_m - 1) / tile_m) * ((plan.taps + tile_n - 1) / tile_n);
  const std::int64_t wanted_splits = weight_gradient_splits(tiles, plan.columns);
  const std::int64_t per_split =
      ((plan.columns + wanted_splits - 1) / wanted_splits + tile_k - 1) / tile_k * tile_k;
  const std::int64_t splits = (plan.columns + per_split - 1) / per_split;
  plan.narrow = plan.narrow && splits * dw.numel() < limit;  // offsets into the partial sums
  const dim3 grid(static_cast<unsigned>((plan.taps + tile_n - 1) / tile_n),
                  static_cast<unsigned>((plan.out_channels + tile_m - 1) / tile_m),
                  static_cast<unsigned>(splits));
  dispatch_floating_or_bfloat16(x.dtype, op, [&](auto tag) {
    using S = typename decltype(tag)::type;
    using T = compute_t<S>;
    // The partial sums go straight into dw only when there is one split and dw holds T.
    const bool summed = splits > 1 || !std::is_same_v<S, T>;
    const Workspace workspace(
        context, summed ? static_cast<std::size_t>(dw.numel()) * sizeof(T) * splits : 0);
    T* const partial = summed ? workspace.as<T>() : dw.ptr<T>();
    with_index(plan, [&](auto index_tag) {
      using Index = typename decltype(index_tag)::type;
      implicit_weight_gradient_kernel<S, Index><<<grid, threads, 0, context.stream>>>(
          partial, dy.ptr<const S>(), x.ptr<const S>(),
          ImplicitColumns<Index>::of(x.shape, plan.out_h, plan.out_w, window),
          Index(plan.out_channels), Index(plan.taps), Index(plan.columns), Index(per_split));
      NG_CUDA_CHECK_LAUNCH();
    });
    if (summed) {
      add_splits_kernel<<<grid_for(dw.numel(), context), threads_per_block, 0, context.stream>>>(
          dw.ptr<S>(), static_cast<const T*>(partial), dw.numel(), static_cast<int>(splits));
      NG_CUDA_CHECK_LAUNCH();
    }
  });
}

}  // namespace

// The backend's methods: im2col and cuBLAS GEMMs over chunks of samples
// (backends/conv_by_columns.h), or the implicit-GEMM kernels above when chosen
// (normgrad::cuda::set_conv_algorithm); both take bfloat16 natively, with float32 sums.
void CudaBackend::conv2d(const TensorRef& y, const TensorRef& x, const TensorRef& weight,
                         const TensorRef* bias, const Window2d& window) {
  DeviceGuard guard(context_.device);
  if (implicit_gemm_convolutions())
    conv2d_implicit_gemm(context_, y, x, weight, bias, window);
  else
    conv2d_by_columns(*this, y, x, weight, bias, window);
}

void CudaBackend::conv2d_weight_gradient(const TensorRef& dw, const TensorRef& x,
                                         const TensorRef& dy, const Window2d& window) {
  DeviceGuard guard(context_.device);
  if (implicit_gemm_convolutions())
    conv2d_weight_gradient_implicit_gemm(context_, dw, x, dy, window);
  else
    conv2d_weight_gradient_by_columns(*this, dw, x, dy, window);
}

}  // namespace normgrad::backend::cuda
