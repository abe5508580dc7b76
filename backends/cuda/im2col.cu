// im2col and col2im for NCHW images (backend.h gives the layout), with stride, padding and
// dilation; ported from backends/cpu/im2col.cpp. Rows of columns are contiguous, the sample
// and row strides are free (conv2d passes the view [N, C kh kw, OH OW] of one matrix
// [C kh kw, N OH OW]).
//
// im2col: one thread per column entry (n, c, i, j, oh, ow), writing the pixel that tap (i, j)
// sees at output (oh, ow), or 0 in the padding. Neighbouring threads take neighbouring ow, so
// the writes are coalesced.
//
// col2im gathers instead of scattering: one thread per image pixel adds up every column entry
// that im2col would have read from it, so no two threads write one element and there are no
// atomics. Tap i of output row oh reads image row h = oh stride_h - padding_h + i dilation_h,
// so pixel row h is read by tap i exactly when
//   t = h + padding_h - i dilation_h  is >= 0, divisible by stride_h, and t / stride_h < OH,
// and then by output row oh = t / stride_h alone (likewise for columns). t falls as i grows,
// so the loop over i stops at the first negative t. The thread visits the taps (i, j) in
// increasing order and adds from 0, which is the order in which the CPU's plane loop adds into
// a pixel: the sums are the same bits on both devices.
//
// Check, H = 7, kernel 3, stride 2, padding 2, dilation 2 (OH = (7 + 4 - 4 - 1) / 2 + 1 = 4;
// output row oh reads rows 2 oh - 2 + {0, 2, 4}): pixel row 4 gets t = 6, 4, 2 for i = 0, 1, 2,
// so (i, oh) = (0, 3), (1, 2), (2, 1), and indeed 6 - 2 + 0 = 4 - 2 + 2 = 2 - 2 + 4 = 4; pixel
// row 6 gets t = 8 (oh = 4, past the end), 6 and 4: (1, 3) and (2, 2); an odd row gets odd t
// only and no entry, as no window reads it.
//
// Positions are computed in 32-bit arithmetic when every offset fits, else in 64-bit.
//
// bfloat16: im2col moves values as they are; col2im adds them in float32 and rounds each pixel
// once (backends/compute_type.h), which is the float32 kernel's sum of the same values.

#include <cstdint>
#include <limits>

#include "backends/compute_type.h"
#include "backends/cuda/cuda_backend.h"
#include "backends/cuda/device_guard.h"
#include "backends/cuda/launch.cuh"
#include "backends/dtype_dispatch.h"

namespace normgrad::backend::cuda {

namespace {

// The geometry of one call; Index is std::int32_t or std::int64_t.
template <typename Index> struct Geometry {
  Index samples, channels, height, width, out_h, out_w;
  Index kernel_h, kernel_w, stride_h, stride_w, padding_h, padding_w, dilation_h, dilation_w;
  Index sample_stride, row_stride;  // of columns, in elements
};

template <typename T, typename Index>
__global__ void im2col_kernel(T* columns, const T* image, Geometry<Index> g, Index total) {
  const Index outputs = g.out_h * g.out_w;
  const Index rows = g.channels * g.kernel_h * g.kernel_w;
  for (Index e = blockIdx.x * Index(blockDim.x) + threadIdx.x; e < total;
       e += Index(gridDim.x) * Index(blockDim.x)) {
    const Index column = e % outputs, row = e / outputs % rows, sample = e / outputs / rows;
    const Index oh = column / g.out_w, ow = column % g.out_w;
    const Index channel = row / (g.kernel_h * g.kernel_w);
    const Index tap = row % (g.kernel_h * g.kernel_w);
    const Index h = oh * g.stride_h - g.padding_h + tap / g.kernel_w * g.dilation_h;
    const Index w = ow * g.stride_w - g.padding_w + tap % g.kernel_w * g.dilation_w;
    T value = T(0);
    if (h >= 0 && h < g.height && w >= 0 && w < g.width)
      value = image[((sample * g.channels + channel) * g.height + h) * g.width + w];
    columns[sample * g.sample_stride + row * g.row_stride + column] = value;
  }
}

template <typename T, typename Index>
__global__ void col2im_kernel(T* image, const T* columns, Geometry<Index> g, Index total) {
  using Sum = compute_t<T>;
  const Index taps = g.kernel_h * g.kernel_w;
  for (Index e = blockIdx.x * Index(blockDim.x) + threadIdx.x; e < total;
       e += Index(gridDim.x) * Index(blockDim.x)) {
    const Index w = e % g.width, h = e / g.width % g.height;
    const Index plane = e / g.width / g.height;  // n C + c
    const Index sample = plane / g.channels, channel = plane % g.channels;
    const T* plane_columns = columns + sample * g.sample_stride + channel * taps * g.row_stride;
    Sum sum = Sum(0);
    for (Index i = 0; i < g.kernel_h; ++i) {
      const Index t_h = h + g.padding_h - i * g.dilation_h;
      if (t_h < 0) break;
      if (t_h % g.stride_h != 0 || t_h / g.stride_h >= g.out_h) continue;
      const Index oh = t_h / g.stride_h;
      for (Index j = 0; j < g.kernel_w; ++j) {
        const Index t_w = w + g.padding_w - j * g.dilation_w;
        if (t_w < 0) break;
        if (t_w % g.stride_w != 0 || t_w / g.stride_w >= g.out_w) continue;
        const Index ow = t_w / g.stride_w;
        sum += static_cast<Sum>(
            plane_columns[(i * g.kernel_w + j) * g.row_stride + oh * g.out_w + ow]);
      }
    }
    image[e] = static_cast<T>(sum);
  }
}

// Checks the operands as the CPU does and returns the geometry in 64-bit.
Geometry<std::int64_t> geometry_of(const TensorRef& image, const TensorRef& columns,
                                   const Window2d& k, const char* op) {
  NG_CHECK(image.rank() == 4 && columns.rank() == 3, op,
           "expects image [N, C, H, W] and columns [N, C kh kw, OH OW], got ", image.shape, " and ",
           columns.shape);
  NG_CHECK(image.dtype == columns.dtype, op, "dtypes differ: ", image.dtype, " and ",
           columns.dtype);
  NG_CHECK(is_contiguous(image), op, "expects a contiguous image, got strides ", image.strides);
  const std::int64_t taps = k.kernel_h * k.kernel_w;
  NG_CHECK(columns.shape[0] == image.shape[0] && columns.shape[1] == image.shape[1] * taps, op,
           "columns ", columns.shape, " do not match image ", image.shape);
  NG_CHECK(columns.shape[2] <= 1 || columns.strides[2] == 1, op,
           "columns need contiguous rows, got strides ", columns.strides);
  NG_CHECK(columns.strides[0] >= 0 && columns.strides[1] >= 0, op,
           "columns need non-negative strides, got ", columns.strides);
  const Geometry<std::int64_t> g{image.shape[0],
                                 image.shape[1],
                                 image.shape[2],
                                 image.shape[3],
                                 k.output_height(image.shape[2]),
                                 k.output_width(image.shape[3]),
                                 k.kernel_h,
                                 k.kernel_w,
                                 k.stride_h,
                                 k.stride_w,
                                 k.padding_h,
                                 k.padding_w,
                                 k.dilation_h,
                                 k.dilation_w,
                                 columns.strides[0],
                                 columns.strides[1]};
  NG_CHECK(columns.shape[2] == g.out_h * g.out_w, op, "columns ", columns.shape,
           " do not hold the ", g.out_h, " x ", g.out_w, " outputs of image ", image.shape);
  return g;
}

// Whether every position the kernels compute (element counts, offsets into both operands,
// and the tap arithmetic, which stays within a few kernel extents of the image) fits in int32.
bool fits_int32(const Geometry<std::int64_t>& g, const TensorRef& image, const TensorRef& columns) {
  constexpr std::int64_t limit = std::numeric_limits<std::int32_t>::max() / 2;
  const std::int64_t column_extent =
      (g.samples - 1) * g.sample_stride + (columns.shape[1] - 1) * g.row_stride + columns.shape[2];
  const std::int64_t reach_h =
      g.height + g.padding_h + g.kernel_h * g.dilation_h + g.out_h * g.stride_h;
  const std::int64_t reach_w =
      g.width + g.padding_w + g.kernel_w * g.dilation_w + g.out_w * g.stride_w;
  return image.numel() < limit && columns.numel() < limit && column_extent < limit &&
         reach_h < limit && reach_w < limit;
}

template <typename Index> Geometry<Index> narrow(const Geometry<std::int64_t>& g) {
  return {Index(g.samples),    Index(g.channels),   Index(g.height),        Index(g.width),
          Index(g.out_h),      Index(g.out_w),      Index(g.kernel_h),      Index(g.kernel_w),
          Index(g.stride_h),   Index(g.stride_w),   Index(g.padding_h),     Index(g.padding_w),
          Index(g.dilation_h), Index(g.dilation_w), Index(g.sample_stride), Index(g.row_stride)};
}

// Runs im2col (to_image false) or col2im over one thread per written element.
template <bool to_image>
void run(const Context& context, const TensorRef& image, const TensorRef& columns,
         const Window2d& window, const char* op) {
  const Geometry<std::int64_t> g = geometry_of(image, columns, window, op);
  const std::int64_t total = to_image ? image.numel() : columns.numel();
  if (total == 0) return;
  dispatch_floating_or_bfloat16(image.dtype, op, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const auto launch = [&](auto index_tag) {
      using Index = typename decltype(index_tag)::type;
      const unsigned blocks = grid_for(total, context);
      if constexpr (to_image)
        col2im_kernel<T, Index><<<blocks, threads_per_block, 0, context.stream>>>(
            image.ptr<T>(), columns.ptr<const T>(), narrow<Index>(g), Index(total));
      else
        im2col_kernel<T, Index><<<blocks, threads_per_block, 0, context.stream>>>(
            columns.ptr<T>(), image.ptr<const T>(), narrow<Index>(g), Index(total));
      NG_CUDA_CHECK_LAUNCH();
    };
    if (fits_int32(g, image, columns))
      launch(TypeTag<std::int32_t>{});
    else
      launch(TypeTag<std::int64_t>{});
  });
}

}  // namespace

void CudaBackend::im2col(const TensorRef& columns, const TensorRef& image, const Window2d& window) {
  DeviceGuard guard(context_.device);
  const Context& context = context_;
  run<false>(context, image, columns, window, "cuda im2col");
}

void CudaBackend::col2im(const TensorRef& image, const TensorRef& columns, const Window2d& window) {
  DeviceGuard guard(context_.device);
  const Context& context = context_;
  run<true>(context, image, columns, window, "cuda col2im");
}

}  // namespace normgrad::backend::cuda
