// Max and average pooling over [N, C, H, W] planes (backend.h gives the contract), ported
// from backends/cpu/pool.cpp. No kernel here uses atomics, and every sum is taken in the
// order the CPU takes it, so the results are the CPU's bits and the same on every run.
//
// Forward passes: one thread per output, scanning its window row by row. Max pooling takes
// the window's first in-image pixel as the candidate to beat; a later pixel wins only if it is
// greater, or is NaN while the best so far is not (first maximum on ties, the first NaN wins).
// A window wholly in the padding gives -inf and index -1.
//
// avg_pool2d_backward gathers: one thread per input pixel adds dy / (kh kw) over the windows
// that contain it. Window row oh covers image rows oh stride - padding + i dilation,
// i in [0, kernel), so pixel row h lies in window row oh exactly when for some i
//   t = h + padding - i dilation  is >= 0, divisible by stride, and oh = t / stride < OH.
// Distinct i give distinct oh, and oh grows as i falls, so running i from kernel - 1 down to 0
// visits the windows in increasing oh (and stops at the first oh past the end); the same for
// columns. The pixel thus adds its windows in row-major (oh, ow) order from 0, the CPU's order,
// each term dy (1 / (kh kw)) rounded before it is added (no fused multiply-add), as on the CPU.
// Check, H = 5, kernel 3, stride 2, padding 1 (OH = 3; window rows oh cover 2 oh - 1 + {0, 1,
// 2}, i.e. {-1, 0, 1}, {1, 2, 3}, {3, 4, 5}): pixel row 1 has t = 0 (i = 2, oh = 0), 1 (odd),
// 2 (i = 0, oh = 1): windows 0 and 1, as listed; pixel row 4 has t = 3, 4, 5: window 2 alone.
//
// max_pool2d_backward has no window, only each output's argmax index, so it cannot enumerate
// the outputs that may point at a pixel. One warp owns a whole plane of dx instead: it zeroes
// the plane, then takes the plane's outputs 32 at a time, in order. Lanes whose indices are
// equal (found with __match_any_sync) form a group; the group's lowest lane adds the group's
// gradients, in lane order, to the pixel's running sum. So each pixel sums its outputs'
// gradients from 0 in increasing output order, as the CPU does, and only one lane ever writes
// it at a time (__syncwarp orders one chunk's writes before the next chunk's reads). The cost
// is OH OW / 32 dependent steps per plane: planes run in parallel, so this is fast for the
// many small planes of a CNN batch and slow for a few very large planes. Indices of -1 (a
// window in the padding) and indices outside the plane are skipped.
//
// bfloat16: every kernel reads it, computes in float32 and rounds once as it stores
// (backends/compute_type.h). max_pool2d_backward's running sums stay float32, in a workspace
// rounded into dx at the end, so each pixel is the float32 kernel's sum rounded once.

#include <cstdint>
#include <limits>
#include <type_traits>

#include "backends/compute_type.h"
#include "backends/cuda/cuda_backend.h"
#include "backends/cuda/device_guard.h"
#include "backends/cuda/launch.cuh"
#include "backends/dtype_dispatch.h"

namespace normgrad::backend::cuda {

namespace {

// Index is std::int32_t when every position fits, else std::int64_t.
template <typename Index> struct PoolGeometry {
  Index height, width, out_h, out_w;
  Index kernel_h, kernel_w, stride_h, stride_w, padding_h, padding_w, dilation_h, dilation_w;
};

// The in-image positions [first, last) of a window that starts at `start` (may be negative),
// stepping by `dilation`: first is the window's first position >= 0.
template <typename Index> struct Span { Index first, last; };

template <typename Index>
__device__ __forceinline__ Span<Index> span(Index start, Index kernel, Index dilation, Index size) {
  Index first = start;
  if (first < 0) first += (-first + dilation - 1) / dilation * dilation;
  const Index last = start + dilation * (kernel - 1) + 1;
  return {first, last < size ? last : size};
}

// a b rounded on its own, never fused into a following addition: the CPU's rounding.
template <typename T> __device__ __forceinline__ T rounded_product(T a, T b) {
  if constexpr (sizeof(T) == 4)
    return __fmul_rn(a, b);
  else
    return __dmul_rn(a, b);
}

template <typename T> __device__ __forceinline__ T negative_infinity() {
  if constexpr (sizeof(T) == 4)
    return -__int_as_float(0x7f800000);
  else
    return -__longlong_as_double(0x7ff0000000000000LL);
}

template <typename S, typename Index, typename T = compute_t<S>>
__global__ void max_pool_kernel(S* out, std::int64_t* indices, const S* in, PoolGeometry<Index> g,
                                Index total) {
  const Index outputs = g.out_h * g.out_w, pixels = g.height * g.width;
  for (Index e = blockIdx.x * Index(blockDim.x) + threadIdx.x; e < total;
       e += Index(gridDim.x) * Index(blockDim.x)) {
    const Index plane = e / outputs, o = e % outputs;
    const Index oh = o / g.out_w, ow = o % g.out_w;
    const Span<Index> rows =
        span(oh * g.stride_h - g.padding_h, g.kernel_h, g.dilation_h, g.height);
    const Span<Index> cols = span(ow * g.stride_w - g.padding_w, g.kernel_w, g.dilation_w, g.width);
    const S* plane_in = in + plane * pixels;
    Index best_index = -1;
    T best = negative_infinity<T>();
    if (rows.first < rows.last && cols.first < cols.last) {
      best_index = rows.first * g.width + cols.first;
      best = static_cast<T>(plane_in[best_index]);
    }
    for (Index h = rows.first; h < rows.last; h += g.dilation_h)
      for (Index w = cols.first; w < cols.last; w += g.dilation_w) {
        const T value = static_cast<T>(plane_in[h * g.width + w]);
        // Strictly greater keeps the first maximum; a NaN wins and stays.
        const bool take = (value > best) | ((value != value) & (best == best));
        best = take ? value : best;
        best_index = take ? h * g.width + w : best_index;
      }
    out[e] = static_cast<S>(best);
    indices[e] = best_index;
  }
}

template <typename S, typename Index, typename T = compute_t<S>>
__global__ void avg_pool_kernel(S* out, const S* in, PoolGeometry<Index> g, T scale, Index total) {
  const Index outputs = g.out_h * g.out_w, pixels = g.height * g.width;
  for (Index e = blockIdx.x * Index(blockDim.x) + threadIdx.x; e < total;
       e += Index(gridDim.x) * Index(blockDim.x)) {
    const Index plane = e / outputs, o = e % outputs;
    const Index oh = o / g.out_w, ow = o % g.out_w;
    const Span<Index> rows =
        span(oh * g.stride_h - g.padding_h, g.kernel_h, g.dilation_h, g.height);
    const Span<Index> cols = span(ow * g.stride_w - g.padding_w, g.kernel_w, g.dilation_w, g.width);
    const S* plane_in = in + plane * pixels;
    T sum = T(0);
    for (Index h = rows.first; h < rows.last; h += g.dilation_h)
      for (Index w = cols.first; w < cols.last; w += g.dilation_w)
        sum += static_cast<T>(plane_in[h * g.width + w]);
    out[e] = static_cast<S>(sum * scale);
  }
}

// One thread per input pixel (see the file comment for the window arithmetic).
template <typename S, typename Index, typename T = compute_t<S>>
__global__ void avg_pool_backward_kernel(S* dx, const S* dy, PoolGeometry<Index> g, T scale,
                                         Index total) {
  const Index outputs = g.out_h * g.out_w, pixels = g.height * g.width;
  for (Index e = blockIdx.x * Index(blockDim.x) + threadIdx.x; e < total;
       e += Index(gridDim.x) * Index(blockDim.x)) {
    const Index plane = e / pixels, pixel = e % pixels;
    const Index h = pixel / g.width, w = pixel % g.width;
    const S* plane_dy = dy + plane * outputs;
    T sum = T(0);
    for (Index i = g.kernel_h - 1; i >= 0; --i) {
      const Index t_h = h + g.padding_h - i * g.dilation_h;
      if (t_h < 0 || t_h % g.stride_h != 0) continue;
      const Index oh = t_h / g.stride_h;
      if (oh >= g.out_h) break;
      for (Index j = g.kernel_w - 1; j >= 0; --j) {
        const Index t_w = w + g.padding_w - j * g.dilation_w;
        if (t_w < 0 || t_w % g.stride_w != 0) continue;
        const Index ow = t_w / g.stride_w;
        if (ow >= g.out_w) break;
        sum += rounded_product(static_cast<T>(plane_dy[oh * g.out_w + ow]), scale);
      }
    }
    dx[e] = static_cast<S>(sum);
  }
}

// One warp per plane (see the file comment); launched with threads_per_block threads.
// dx holds T (the compute type: a workspace for bfloat16), dy holds S.
template <typename S, typename T = compute_t<S>>
__global__ void max_pool_backward_kernel(T* dx, const S* dy, const std::int64_t* indices,
                                         std::int64_t planes, std::int64_t pixels,
                                         std::int64_t outputs) {
  __shared__ T gradients[threads_per_block];
  const int lane = threadIdx.x % warp_size;
  const int warps_per_block = blockDim.x / warp_size;
  T* warp_gradients = gradients + threadIdx.x / warp_size * warp_size;
  const std::int64_t warps = std::int64_t{gridDim.x} * warps_per_block;
  for (std::int64_t plane = std::int64_t{blockIdx.x} * warps_per_block + threadIdx.x / warp_size;
       plane < planes; plane += warps) {
    T* plane_dx = dx + plane * pixels;
    for (std::int64_t p = lane; p < pixels; p += warp_size) plane_dx[p] = T(0);
    __syncwarp();
    for (std::int64_t first = 0; first < outputs; first += warp_size) {
      const std::int64_t o = first + lane;
      std::int64_t target = -1;
      T gradient = T(0);
      if (o < outputs) {
        target = indices[plane * outputs + o];
        gradient = static_cast<T>(dy[plane * outputs + o]);
        if (target >= pixels) target = -1;
      }
      warp_gradients[lane] = gradient;
      const unsigned group = __match_any_sync(0xffffffffu, target);
      __syncwarp();  // the group's gradients are in shared memory
      const bool leader = (group & ((1u << lane) - 1)) == 0;
      if (target >= 0 && leader) {
        T sum = plane_dx[target];
        for (unsigned rest = group; rest != 0; rest &= rest - 1)
          sum += warp_gradients[__ffs(rest) - 1];
        plane_dx[target] = sum;
      }
      __syncwarp();  // this chunk's sums land before the next chunk reads them
    }
  }
}

// Checks shared by every pooling method (the CPU's, plus contiguity, which the CPU assumes).
void check_planes(const TensorRef& image, const TensorRef& out, const char* op) {
  NG_CHECK(image.rank() == 4 && out.rank() == 4 && image.shape[0] == out.shape[0] &&
               image.shape[1] == out.shape[1],
           op, "expects input and output [N, C, H, W] alike in N and C, got ", image.shape, " and ",
           out.shape);
  NG_CHECK(image.dtype == out.dtype, op, "dtypes differ: ", image.dtype, " and ", out.dtype);
  NG_CHECK(is_contiguous(image) && is_contiguous(out), op,
           "expects contiguous operands, got strides ", image.strides, " and ", out.strides);
}

void check_indices(const TensorRef& indices, const TensorRef& out, const char* op) {
  NG_CHECK(indices.dtype == DType::Int64 && indices.shape == out.shape && is_contiguous(indices),
           op, "indices must be contiguous int64 of the output's shape ", out.shape, ", got ",
           indices.dtype, " ", indices.shape);
}

PoolGeometry<std::int64_t> geometry_of(const TensorRef& image, const TensorRef& out,
                                       const Window2d& k) {
  return {image.shape[2], image.shape[3], out.shape[2], out.shape[3], k.kernel_h,   k.kernel_w,
          k.stride_h,     k.stride_w,     k.padding_h,  k.padding_w,  k.dilation_h, k.dilation_w};
}

// Whether all the positions of the kernels, window arithmetic included, fit in int32.
bool fits_int32(const PoolGeometry<std::int64_t>& g, const TensorRef& image, const TensorRef& out) {
  constexpr std::int64_t limit = std::numeric_limits<std::int32_t>::max() / 2;
  const std::int64_t reach_h =
      g.height + g.padding_h + g.kernel_h * g.dilation_h + g.out_h * g.stride_h;
  const std::int64_t reach_w =
      g.width + g.padding_w + g.kernel_w * g.dilation_w + g.out_w * g.stride_w;
  return image.numel() < limit && out.numel() < limit && reach_h < limit && reach_w < limit;
}

template <typename Index> PoolGeometry<Index> narrow(const PoolGeometry<std::int64_t>& g) {
  return {Index(g.height),    Index(g.width),     Index(g.out_h),      Index(g.out_w),
          Index(g.kernel_h),  Index(g.kernel_w),  Index(g.stride_h),   Index(g.stride_w),
          Index(g.padding_h), Index(g.padding_w), Index(g.dilation_h), Index(g.dilation_w)};
}

// Calls launch(TypeTag<Index>) with the narrowest index type that fits.
template <typename Launch>
void with_index_type(const PoolGeometry<std::int64_t>& g, const TensorRef& image,
                     const TensorRef& out, Launch&& launch) {
  if (fits_int32(g, image, out))
    launch(TypeTag<std::int32_t>{});
  else
    launch(TypeTag<std::int64_t>{});
}

}  // namespace

void CudaBackend::max_pool2d(const TensorRef& out, const TensorRef& indices, const TensorRef& in,
                             const Window2d& window) {
  DeviceGuard guard(context_.device);
  const Context& context = context_;
  const char* op = "cuda max_pool2d";
  check_planes(in, out, op);
  check_indices(indices, out, op);
  const std::int64_t total = out.numel();
  if (total == 0) return;
  const PoolGeometry<std::int64_t> g = geometry_of(in, out, window);
  dispatch_floating_or_bfloat16(in.dtype, op, [&](auto tag) {
    using S = typename decltype(tag)::type;
    with_index_type(g, in, out, [&](auto index_tag) {
      using Index = typename decltype(index_tag)::type;
      max_pool_kernel<S, Index><<<grid_for(total, context), threads_per_block, 0, context.stream>>>(
          out.ptr<S>(), indices.ptr<std::int64_t>(), in.ptr<const S>(), narrow<Index>(g),
          Index(total));
      NG_CUDA_CHECK_LAUNCH();
    });
  });
}

void CudaBackend::max_pool2d_backward(const TensorRef& dx, const TensorRef& dy,
                                      const TensorRef& indices) {
  DeviceGuard guard(context_.device);
  const Context& context = context_;
  const char* op = "cuda max_pool2d_backward";
  check_planes(dx, dy, op);
  check_indices(indices, dy, op);
  const std::int64_t planes = dx.shape[0] * dx.shape[1];
  const std::int64_t pixels = dx.shape[2] * dx.shape[3];
  const std::int64_t outputs = dy.shape[2] * dy.shape[3];
  if (planes * pixels == 0) return;
  dispatch_floating_or_bfloat16(dx.dtype, op, [&](auto tag) {
    using S = typename decltype(tag)::type;
    using T = compute_t<S>;
    const bool rounds = !std::is_same_v<S, T>;
    const Workspace sums(context, rounds ? dx.numel() * sizeof(T) : 0);
    T* into = rounds ? sums.as<T>() : dx.ptr<T>();
    max_pool_backward_kernel<S>
        <<<grid_for(planes * warp_size, context), threads_per_block, 0, context.stream>>>(
            into, dy.ptr<const S>(), indices.ptr<const std::int64_t>(), planes, pixels, outputs);
    NG_CUDA_CHECK_LAUNCH();
    if (rounds) {
      TensorRef float32_dx = dx;
      float32_dx.data = into;
      float32_dx.dtype = dtype_of<T>::value;
      copy(dx, float32_dx);
    }
  });
}

void CudaBackend::avg_pool2d(const TensorRef& out, const TensorRef& in, const Window2d& window) {
  DeviceGuard guard(context_.device);
  const Context& context = context_;
  const char* op = "cuda avg_pool2d";
  check_planes(in, out, op);
  const std::int64_t total = out.numel();
  if (total == 0) return;
  const PoolGeometry<std::int64_t> g = geometry_of(in, out, window);
  dispatch_floating_or_bfloat16(in.dtype, op, [&](auto tag) {
    using S = typename decltype(tag)::type;
    using T = compute_t<S>;
    const T scale = T(1) / static_cast<T>(window.kernel_h * window.kernel_w);
    with_index_type(g, in, out, [&](auto index_tag) {
      using Index = typename decltype(index_tag)::type;
      avg_pool_kernel<S, Index><<<grid_for(total, context), threads_per_block, 0, context.stream>>>(
          out.ptr<S>(), in.ptr<const S>(), narrow<Index>(g), scale, Index(total));
      NG_CUDA_CHECK_LAUNCH();
    });
  });
}

void CudaBackend::avg_pool2d_backward(const TensorRef& dx, const TensorRef& dy,
                                      const Window2d& window) {
  DeviceGuard guard(context_.device);
  const Context& context = context_;
  const char* op = "cuda avg_pool2d_backward";
  check_planes(dx, dy, op);
  const std::int64_t total = dx.numel();
  if (total == 0) return;
  const PoolGeometry<std::int64_t> g = geometry_of(dx, dy, window);
  dispatch_floating_or_bfloat16(dx.dtype, op, [&](auto tag) {
    using S = typename decltype(tag)::type;
    using T = compute_t<S>;
    const T scale = T(1) / static_cast<T>(window.kernel_h * window.kernel_w);
    with_index_type(g, dx, dy, [&](auto index_tag) {
      using Index = typename decltype(index_tag)::type;
      avg_pool_backward_kernel<S, Index>
          <<<grid_for(total, context), threads_per_block, 0, context.stream>>>(
              dx.ptr<S>(), dy.ptr<const S>(), narrow<Index>(g), scale, Index(total));
      NG_CUDA_CHECK_LAUNCH();
    });
  });
}

}  // namespace normgrad::backend::cuda
