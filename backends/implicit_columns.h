#pragma once
// im2col's columns (backend.h) read straight from the image, entry by entry, without writing
// them out: what an implicit-GEMM convolution gathers into its tiles. Host and device share it,
// so the CPU tests hold its addressing against im2col's columns.
//
// The columns of a whole batch form one matrix X [K, N L]: K = C kh kw taps (row k = c kh kw +
// i kw + j), N L outputs (column p = n L + oh OW + ow, L = OH OW). Column p's window starts at
// image row h0 = oh stride_h - padding_h and column w0 = ow stride_w - padding_w of sample n;
// row k of it reads pixel (h0 + i dilation_h, w0 + j dilation_w) of channel c, or 0 where that
// falls in the padding.
//
//   const ImplicitColumns<int> g = ImplicitColumns<int>::of(image_shape, output_hw, window);
//   const auto column = g.column(p);                     // once per column
//   const int at = g.offset(k, column);                  // per entry: -1 in the padding
//   value = at < 0 ? 0 : image[at];
//
// Index is std::int32_t where every offset fits (the caller checks), else std::int64_t.

#include <cstdint>

#include "backends/backend.h"
#include "backends/host_device.h"

namespace normgrad::backend {

template <typename Index> struct ImplicitColumns {
  Index channels, height, width, out_w, positions;  // positions = L = OH OW
  Index kernel_h, kernel_w, stride_h, stride_w, padding_h, padding_w, dilation_h, dilation_w;

  // Where one column's window sits: the sample's first element and the window's corner.
  struct Column {
    Index sample_offset;
    Index h0, w0;
  };

  // image [N, C, H, W] (contiguous) convolved to outputs of out_h x out_w positions.
  static ImplicitColumns of(const Shape& image, std::int64_t out_h, std::int64_t out_w,
                            const Window2d& window) {
    return {Index(image[1]),         Index(image[2]),
            Index(image[3]),         Index(out_w),
            Index(out_h * out_w),    Index(window.kernel_h),
            Index(window.kernel_w),  Index(window.stride_h),
            Index(window.stride_w),  Index(window.padding_h),
            Index(window.padding_w), Index(window.dilation_h),
            Index(window.dilation_w)};
  }

  Index taps() const { return channels * kernel_h * kernel_w; }

  NORMGRAD_HOST_DEVICE Column column(Index p) const {
    const Index sample = p / positions, position = p - sample * positions;
    const Index oh = position / out_w, ow = position - oh * out_w;
    return {sample * channels * height * width, oh * stride_h - padding_h,
            ow * stride_w - padding_w};
  }

  // The image offset that row k of `column` reads, or -1 in the padding.
  NORMGRAD_HOST_DEVICE Index offset(Index k, const Column& column) const {
    const Index window = kernel_h * kernel_w;
    const Index channel = k / window, tap = k - channel * window;
    const Index i = tap / kernel_w, j = tap - i * kernel_w;
    const Index h = column.h0 + i * dilation_h, w = column.w0 + j * dilation_w;
    if (h < 0 || h >= height || w < 0 || w >= width) return -1;
    return column.sample_offset + (channel * height + h) * width + w;
  }
};

}  // namespace normgrad::backend
