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
// Each output is one fused multiply-add chain over k = 0 .. K-1 in order, so results repeat
// bit for bit run after run. They differ from the column path's (cuBLAS sums in its own order)
// within float rounding.
//
// Loads: thread t of 256 reads W's rows o0 + t % 64 at four taps t / 64 + 4 q (W is small and
// stays in cache), and X's column p0 + t % 64 at four taps: consecutive threads read
// consecutive outputs, which for stride 1 are consecutive pixels. Thread (ty, tx) = (t / 16,
// t % 16) computes the outputs (ty + 16 a, tx + 16 b), a, b < 4: a warp reads two distinct
// values of the W slice (broadcasts) and 16 consecutive ones of the X slice per step.

#include <cstdint>
#include <limits>

#include "backends/cuda/implicit_conv.h"
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

template <typename T, typename Index>
__global__ void __launch_bounds__(threads)
    implicit_conv_kernel(T* y, const T* x, const T* weight, const T* bias, ImplicitColumns<Index> g,
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
      w_next[q] = o_inside && k < taps ? weight[load_o * taps + k] : T(0);
      const Index at = p_inside && k < taps ? g.offset(k, column) : Index(-1);
      x_next[q] = at >= 0 ? x[at] : T(0);
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
    const T shift = bias != nullptr ? bias[o] : T(0);
#pragma unroll
    for (int b = 0; b < 4; ++b) {
      const Index p = p0 + tx + 16 * b;
      if (p >= columns) continue;
      const Index sample = p / g.positions, position = p - sample * g.positions;
      y[(sample * out_channels + o) * g.positions + position] = sum[a][b] + shift;
    }
  }
}

std::int64_t out_size(std::int64_t size, std::int64_t kernel, std::int64_t stride,
                      std::int64_t padding, std::int64_t dilation) {
  return (size + 2 * padding - dilation * (kernel - 1) - 1) / stride + 1;
}

}  // namespace

void conv2d_implicit_gemm(const Context& context, const TensorRef& y, const TensorRef& x,
                          const TensorRef& weight, const TensorRef* bias, const Window2d& window) {
  const char* const op = "cuda conv2d (implicit GEMM)";
  NG_CHECK(x.rank() == 4 && weight.rank() == 4 && y.rank() == 4, op,
           "expects x [N, C, H, W], weight [O, C, kh, kw] and y [N, O, OH, OW], got ", x.shape,
           ", ", weight.shape, " and ", y.shape);
  NG_CHECK(is_contiguous(x) && is_contiguous(weight) && is_contiguous(y) &&
               (bias == nullptr || is_contiguous(*bias)),
           op, "expects contiguous operands");
  const std::int64_t out_h =
      out_size(x.shape[2], window.kernel_h, window.stride_h, window.padding_h, window.dilation_h);
  const std::int64_t out_w =
      out_size(x.shape[3], window.kernel_w, window.stride_w, window.padding_w, window.dilation_w);
  NG_CHECK(y.shape == Shape({x.shape[0], weight.shape[0], out_h, out_w}) &&
               weight.shape[1] == x.shape[1] && weight.shape[2] == window.kernel_h &&
               weight.shape[3] == window.kernel_w,
           op, "x ", x.shape, ", weight ", weight.shape, " and y ", y.shape,
           " do not fit the window");
  const std::int64_t out_channels = y.shape[1], columns = x.shape[0] * out_h * out_w;
  const std::int64_t taps = x.shape[1] * window.kernel_h * window.kernel_w;
  if (y.numel() == 0) return;
  const std::int64_t blocks_m = (out_channels + tile_m - 1) / tile_m;
  const std::int64_t blocks_n = (columns + tile_n - 1) / tile_n;
  NG_CHECK(blocks_m <= 65535 && blocks_n <= std::numeric_limits<std::int32_t>::max(), op,
           "too many output channels (", out_channels, ") or outputs (", columns, ")");
  // 32-bit offsets when every offset into the three tensors, and the window arithmetic, fits.
  constexpr std::int64_t limit = std::numeric_limits<std::int32_t>::max() / 2;
  const std::int64_t reach = std::max(x.shape[2], x.shape[3]) + window.padding_h +
                             window.padding_w + window.kernel_h * window.dilation_h +
                             window.kernel_w * window.dilation_w +
                             std::max(out_h * window.stride_h, out_w * window.stride_w);
  const bool narrow = x.numel() < limit && y.numel() < limit && weight.numel() < limit &&
                      columns + tile_n < limit && reach < limit;
  const dim3 grid(static_cast<unsigned>(blocks_n), static_cast<unsigned>(blocks_m));
  dispatch_floating(x.dtype, op, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* shift = bias != nullptr ? bias->ptr<const T>() : nullptr;
    const auto launch = [&](auto index_tag) {
      using Index = typename decltype(index_tag)::type;
      implicit_conv_kernel<T, Index><<<grid, threads, 0, context.stream>>>(
          y.ptr<T>(), x.ptr<const T>(), weight.ptr<const T>(), shift,
          ImplicitColumns<Index>::of(x.shape, out_h, out_w, window), Index(out_channels),
          Index(taps), Index(columns));
      NG_CUDA_CHECK_LAUNCH();
    };
    if (narrow)
      launch(TypeTag<std::int32_t>{});
    else
      launch(TypeTag<std::int64_t>{});
  });
}

}  // namespace normgrad::backend::cuda
