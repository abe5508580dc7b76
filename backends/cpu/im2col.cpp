// im2col and col2im (backend.h gives the layout). Work is split over (sample, channel)
// planes: plane (n, c) owns the rows c kh kw .. (c + 1) kh kw of columns[n], so in both
// directions every thread writes memory no other thread touches, and col2im adds into a
// plane in one fixed order, whatever the thread count. Rows of columns are contiguous, but
// the sample and row strides are free: conv2d lays a chunk of samples out as one matrix
// [C kh kw, n OH OW] (row r of every sample side by side), so one GEMM covers the chunk.
//
// For kernel tap (i, j), output column ow reads input column w = ow stride_w + j dilation_w
// - padding_w. Rather than test every w, the run of ow whose w lies inside the image is
// worked out once per tap (valid_run), and the rest of the row is padding. With stride 1
// the run is a plain copy (im2col) or a unit-stride sum (col2im).

#include <algorithm>
#include <cstdint>

#include "backends/bfloat16_widening.h"
#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/strided_loop.h"
#include "backends/dtype_dispatch.h"
#include "base/error.h"

namespace normgrad::backend::cpu {

namespace {

// The outputs [first, last) of `outputs` whose input position o * stride + base lies in
// [0, size).
struct Run {
  std::int64_t first = 0, last = 0;
};

Run valid_run(std::int64_t base, std::int64_t stride, std::int64_t size, std::int64_t outputs) {
  const std::int64_t first = base >= 0 ? 0 : (-base + stride - 1) / stride;
  const std::int64_t last = base >= size ? 0 : (size - 1 - base) / stride + 1;
  Run run{std::min(first, outputs), std::min(last, outputs)};
  if (run.last < run.first) run.last = run.first;
  return run;
}

struct Planes {
  std::int64_t planes, channels, height, width, out_h, out_w;
  std::int64_t sample_stride, row_stride;  // of columns, in elements
};

Planes planes_of(const TensorRef& image, const TensorRef& columns, const Window2d& window,
                 const char* op) {
  NG_CHECK(image.rank() == 4 && columns.rank() == 3, op,
           "expects image [N, C, H, W] and columns [N, C kh kw, OH OW], got ", image.shape, " and ",
           columns.shape);
  NG_CHECK(image.dtype == columns.dtype, op, "dtypes differ: ", image.dtype, " and ",
           columns.dtype);
  const std::int64_t taps = window.kernel_h * window.kernel_w;
  NG_CHECK(columns.shape[0] == image.shape[0] && columns.shape[1] == image.shape[1] * taps, op,
           "columns ", columns.shape, " do not match image ", image.shape);
  NG_CHECK(columns.shape[2] <= 1 || columns.strides[2] == 1, op,
           "columns need contiguous rows, got strides ", columns.strides);
  Planes p{image.shape[0] * image.shape[1],
           image.shape[1],
           image.shape[2],
           image.shape[3],
           window.output_height(image.shape[2]),
           window.output_width(image.shape[3]),
           columns.strides[0],
           columns.strides[1]};
  NG_CHECK(columns.shape[2] == p.out_h * p.out_w, op, "columns ", columns.shape,
           " do not hold the ", p.out_h, " x ", p.out_w, " outputs of image ", image.shape);
  return p;
}

// im2col of tap (i, j) when both strides are 1 and the output is as wide as the image (the
// "same" convolutions of a CNN, and 1x1 ones): then the tap's column row is the image moved
// by (i dilation_h - padding_h) rows and w_base columns, and the in-image rows are one
// contiguous copy. The copy also carries, at each row's ends, the neighbouring row's pixels
// where the tap sees padding; those are zeroed after it. Row by row, the copies and fills of
// a few dozen values each cost more in library calls than in moving data.
template <typename T>
void shifted_plane(const Planes& p, const Window2d& k, std::int64_t i, std::int64_t w_base, Run run,
                   const T* image, T* out) {
  const std::int64_t row_shift = i * k.dilation_h - k.padding_h;  // h = oh + row_shift
  const Run rows = valid_run(row_shift, 1, p.height, p.out_h);
  std::fill(out, out + rows.first * p.out_w, T(0));
  std::fill(out + rows.last * p.out_w, out + p.out_h * p.out_w, T(0));
  if (rows.first == rows.last) return;
  if (run.first < run.last) {
    // out[oh OW + ow] = image[(oh + row_shift) W + ow + w_base], OW = W, from the first
    // in-image value to the last.
    const std::int64_t first = rows.first * p.out_w + run.first;
    const std::int64_t last = (rows.last - 1) * p.out_w + run.last;
    const T* source = image + (rows.first + row_shift) * p.width + run.first + w_base;
    std::copy(source, source + (last - first), out + first);
  }
  // Column by column down the rows: a strided loop, where a row's few values would each be
  // a library call.
  const auto zero_column = [&](std::int64_t ow) {
    for (std::int64_t oh = rows.first; oh < rows.last; ++oh) out[oh * p.out_w + ow] = T(0);
  };
  for (std::int64_t ow = 0; ow < run.first; ++ow) zero_column(ow);
  for (std::int64_t ow = run.last; ow < p.out_w; ++ow) zero_column(ow);
}

// One (sample, channel) plane: image [H, W] and its kh kw rows of columns [OH OW], each
// p.row_stride after the last. With to_image, the columns are added into the image (col2im);
// otherwise they are filled (im2col).
template <bool to_image, typename T>
void plane_loop(const Planes& p, const Window2d& k, T* image, T* columns) {
  const bool shifted = k.stride_h == 1 && k.stride_w == 1 && p.out_w == p.width;
  for (std::int64_t i = 0; i < k.kernel_h; ++i)
    for (std::int64_t j = 0; j < k.kernel_w; ++j) {
      T* column_row = columns + (i * k.kernel_w + j) * p.row_stride;
      const std::int64_t w_base = j * k.dilation_w - k.padding_w;
      const Run run = valid_run(w_base, k.stride_w, p.width, p.out_w);
      if constexpr (!to_image) {
        if (shifted) {
          shifted_plane(p, k, i, w_base, run, image, column_row);
          continue;
        }
      }
      for (std::int64_t oh = 0; oh < p.out_h; ++oh) {
        T* out = column_row + oh * p.out_w;
        const std::int64_t h = oh * k.stride_h + i * k.dilation_h - k.padding_h;
        if (h < 0 || h >= p.height) {
          if constexpr (!to_image) std::fill(out, out + p.out_w, T(0));
          continue;
        }
        T* row = image + h * p.width;  // output ow reads row[ow stride_w + w_base]
        if constexpr (to_image) {
          if (k.stride_w == 1) {
            T* pixels = row + w_base;
            for (std::int64_t ow = run.first; ow < run.last; ++ow) pixels[ow] += out[ow];
          } else {
            for (std::int64_t ow = run.first; ow < run.last; ++ow)
              row[ow * k.stride_w + w_base] += out[ow];
          }
        } else {
          std::fill(out, out + run.first, T(0));
          if (k.stride_w == 1) {
            std::copy(row + run.first + w_base, row + run.last + w_base, out + run.first);
          } else {
            for (std::int64_t ow = run.first; ow < run.last; ++ow)
              out[ow] = row[ow * k.stride_w + w_base];
          }
          std::fill(out + run.last, out + p.out_w, T(0));
        }
      }
    }
}

template <bool to_image>
void run_planes(const TensorRef& image, const TensorRef& columns, const Window2d& window,
                const char* op) {
  const Planes p = planes_of(image, columns, window, op);
  const std::int64_t plane_size = p.height * p.width;
  const std::int64_t taps = window.kernel_h * window.kernel_w;
  dispatch_floating(image.dtype, op, [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* image_data = image.ptr<T>();
    T* column_data = columns.ptr<T>();
    parallel_for(p.planes, taps * p.out_h * p.out_w, [&](std::int64_t begin, std::int64_t end) {
      for (std::int64_t plane = begin; plane < end; ++plane) {
        T* image_plane = image_data + plane * plane_size;
        if constexpr (to_image) std::fill(image_plane, image_plane + plane_size, T(0));
        const std::int64_t sample = plane / p.channels, channel = plane % p.channels;
        plane_loop<to_image>(
            p, window, image_plane,
            column_data + sample * p.sample_stride + channel * taps * p.row_stride);
      }
    });
  });
}

}  // namespace

void CpuBackend::im2col(const TensorRef& columns, const TensorRef& image, const Window2d& window) {
  if (any_bfloat16({&columns, &image})) {
    Float32Copies f(*this);
    im2col(f.output(columns), f.input(image), window);
    return f.finish();
  }
  run_planes<false>(image, columns, window, "cpu im2col");
}

void CpuBackend::col2im(const TensorRef& image, const TensorRef& columns, const Window2d& window) {
  if (any_bfloat16({&image, &columns})) {
    Float32Copies f(*this);
    col2im(f.output(image), f.input(columns), window);
    return f.finish();
  }
  run_planes<true>(image, columns, window, "cpu col2im");
}

}  // namespace normgrad::backend::cpu
