// Max and average pooling over [N, C, H, W] planes (backend.h gives the contract). Each
// (sample, channel) plane is one work item, so backward passes, which add into dx, add in a
// fixed order within a plane and no two threads share a plane: deterministic, no atomics.
//
// Backward:
//   max: dx[p] = sum of dy[o] over the outputs o whose argmax index is p;
//   avg: dx[p] = sum of dy[o] / (kh kw) over the windows o that contain p.
//
// The 2x2 max-pool with stride 2 and no padding, the CNN's, has a path of its own in both
// directions (max_pool_2x2.h).

#include <algorithm>
#include <cstdint>
#include <limits>

#include "backends/bfloat16_widening.h"
#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/simd/max_pool_2x2.h"
#include "backends/cpu/strided_loop.h"
#include "backends/dtype_dispatch.h"
#include "base/error.h"

namespace normgrad::backend::cpu {

namespace {

struct PoolPlanes {
  std::int64_t planes, height, width, out_h, out_w;
  std::int64_t plane() const { return height * width; }
  std::int64_t out_plane() const { return out_h * out_w; }
  PlaneSize size() const { return {height, width, out_h, out_w}; }
};

PoolPlanes pool_planes(const TensorRef& image, const TensorRef& out, const char* op) {
  NG_CHECK(image.rank() == 4 && out.rank() == 4 && image.shape[0] == out.shape[0] &&
               image.shape[1] == out.shape[1],
           op, "expects input and output [N, C, H, W] alike in N and C, got ", image.shape, " and ",
           out.shape);
  NG_CHECK(image.dtype == out.dtype, op, "dtypes differ: ", image.dtype, " and ", out.dtype);
  return {image.shape[0] * image.shape[1], image.shape[2], image.shape[3], out.shape[2],
          out.shape[3]};
}

// The in-image rows [first, last) of a window that starts at `start` (may be negative).
struct Span {
  std::int64_t first, last;
};
Span span(std::int64_t start, std::int64_t kernel, std::int64_t dilation, std::int64_t size) {
  std::int64_t first = start, last = start + dilation * (kernel - 1) + 1;
  while (first < 0) first += dilation;
  return {first, std::min(last, size)};
}

template <typename T>
void max_plane(const PoolPlanes& p, const Window2d& k, const T* in, T* out, std::int64_t* indices) {
  for (std::int64_t oh = 0; oh < p.out_h; ++oh) {
    const Span rows = span(oh * k.stride_h - k.padding_h, k.kernel_h, k.dilation_h, p.height);
    for (std::int64_t ow = 0; ow < p.out_w; ++ow) {
      const Span cols = span(ow * k.stride_w - k.padding_w, k.kernel_w, k.dilation_w, p.width);
      // The window's first in-image pixel is the candidate to beat, so a window of -inf still
      // names a pixel. A window wholly in the padding (possible only with dilation) gives -inf
      // and index -1, which backward skips.
      std::int64_t best_index = -1;
      T best = -std::numeric_limits<T>::infinity();
      if (rows.first < rows.last && cols.first < cols.last) {
        best_index = rows.first * p.width + cols.first;
        best = in[best_index];
      }
      for (std::int64_t h = rows.first; h < rows.last; h += k.dilation_h)
        for (std::int64_t w = cols.first; w < cols.last; w += k.dilation_w) {
          const T value = in[h * p.width + w];
          // Strictly greater keeps the first maximum; a NaN wins and stays.
          const bool take = (value > best) | ((value != value) & (best == best));
          best = take ? value : best;
          best_index = take ? h * p.width + w : best_index;
        }
      out[oh * p.out_w + ow] = best;
      indices[oh * p.out_w + ow] = best_index;
    }
  }
}

template <typename T> void avg_plane(const PoolPlanes& p, const Window2d& k, const T* in, T* out) {
  const T scale = T(1) / static_cast<T>(k.kernel_h * k.kernel_w);
  for (std::int64_t oh = 0; oh < p.out_h; ++oh) {
    const Span rows = span(oh * k.stride_h - k.padding_h, k.kernel_h, k.dilation_h, p.height);
    for (std::int64_t ow = 0; ow < p.out_w; ++ow) {
      const Span cols = span(ow * k.stride_w - k.padding_w, k.kernel_w, k.dilation_w, p.width);
      T sum = T(0);
      for (std::int64_t h = rows.first; h < rows.last; h += k.dilation_h)
        for (std::int64_t w = cols.first; w < cols.last; w += k.dilation_w)
          sum += in[h * p.width + w];
      out[oh * p.out_w + ow] = sum * scale;
    }
  }
}

template <typename T>
void avg_backward_plane(const PoolPlanes& p, const Window2d& k, T* dx, const T* dy) {
  const T scale = T(1) / static_cast<T>(k.kernel_h * k.kernel_w);
  std::fill(dx, dx + p.plane(), T(0));
  for (std::int64_t oh = 0; oh < p.out_h; ++oh) {
    const Span rows = span(oh * k.stride_h - k.padding_h, k.kernel_h, k.dilation_h, p.height);
    for (std::int64_t ow = 0; ow < p.out_w; ++ow) {
      const Span cols = span(ow * k.stride_w - k.padding_w, k.kernel_w, k.dilation_w, p.width);
      const T grad = dy[oh * p.out_w + ow] * scale;
      for (std::int64_t h = rows.first; h < rows.last; h += k.dilation_h)
        for (std::int64_t w = cols.first; w < cols.last; w += k.dilation_w)
          dx[h * p.width + w] += grad;
    }
  }
}

}  // namespace

void CpuBackend::max_pool2d(const TensorRef& out, const TensorRef& indices, const TensorRef& in,
                            const Window2d& window) {
  if (any_bfloat16({&out, &in})) {
    Float32Copies f(*this);
    max_pool2d(f.output(out), indices, f.input(in), window);
    return f.finish();
  }
  const char* op = "cpu max_pool2d";
  const PoolPlanes p = pool_planes(in, out, op);
  NG_CHECK(indices.dtype == DType::Int64 && indices.shape == out.shape, op,
           "indices must be int64 of the output's shape ", out.shape, ", got ", indices.dtype, " ",
           indices.shape);
  dispatch_floating(in.dtype, op, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const std::int64_t cost = p.out_plane() * window.kernel_h * window.kernel_w;
    const bool tiles = is_max_pool_2x2(window);
    parallel_for(p.planes, cost, [&](std::int64_t begin, std::int64_t end) {
      for (std::int64_t plane = begin; plane < end; ++plane) {
        const T* plane_in = in.ptr<const T>() + plane * p.plane();
        T* plane_out = out.ptr<T>() + plane * p.out_plane();
        std::int64_t* plane_indices = indices.ptr<std::int64_t>() + plane * p.out_plane();
        if (tiles)
          max_pool_2x2_plane(p.size(), plane_in, plane_out, plane_indices);
        else
          max_plane(p, window, plane_in, plane_out, plane_indices);
      }
    });
  });
}

void CpuBackend::max_pool2d_backward(const TensorRef& dx, const TensorRef& dy,
                                     const TensorRef& indices) {
  if (any_bfloat16({&dx, &dy})) {
    Float32Copies f(*this);
    max_pool2d_backward(f.output(dx), f.input(dy), indices);
    return f.finish();
  }
  const char* op = "cpu max_pool2d_backward";
  const PoolPlanes p = pool_planes(dx, dy, op);
  NG_CHECK(indices.dtype == DType::Int64 && indices.shape == dy.shape, op,
           "indices must be int64 of dy's shape ", dy.shape, ", got ", indices.dtype, " ",
           indices.shape);
  // Only the shapes of a 2x2, stride-2 pool are known here; the 2x2 path checks the indices.
  const bool may_tile = p.out_h == p.height / 2 && p.out_w == p.width / 2;
  dispatch_floating(dx.dtype, op, [&](auto tag) {
    using T = typename decltype(tag)::type;
    parallel_for(p.planes, p.plane() + p.out_plane(), [&](std::int64_t begin, std::int64_t end) {
      for (std::int64_t plane = begin; plane < end; ++plane) {
        T* grad_in = dx.ptr<T>() + plane * p.plane();
        const T* grad_out = dy.ptr<const T>() + plane * p.out_plane();
        const std::int64_t* index = indices.ptr<const std::int64_t>() + plane * p.out_plane();
        if (may_tile && max_pool_2x2_backward_plane(p.size(), grad_in, grad_out, index)) continue;
        std::fill(grad_in, grad_in + p.plane(), T(0));
        for (std::int64_t o = 0; o < p.out_plane(); ++o)
          if (index[o] >= 0) grad_in[index[o]] += grad_out[o];
      }
    });
  });
}

void CpuBackend::avg_pool2d(const TensorRef& out, const TensorRef& in, const Window2d& window) {
  if (any_bfloat16({&out, &in})) {
    Float32Copies f(*this);
    avg_pool2d(f.output(out), f.input(in), window);
    return f.finish();
  }
  const char* op = "cpu avg_pool2d";
  const PoolPlanes p = pool_planes(in, out, op);
  dispatch_floating(in.dtype, op, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const std::int64_t cost = p.out_plane() * window.kernel_h * window.kernel_w;
    parallel_for(p.planes, cost, [&](std::int64_t begin, std::int64_t end) {
      for (std::int64_t plane = begin; plane < end; ++plane)
        avg_plane(p, window, in.ptr<const T>() + plane * p.plane(),
                  out.ptr<T>() + plane * p.out_plane());
    });
  });
}

void CpuBackend::avg_pool2d_backward(const TensorRef& dx, const TensorRef& dy,
                                     const Window2d& window) {
  if (any_bfloat16({&dx, &dy})) {
    Float32Copies f(*this);
    avg_pool2d_backward(f.output(dx), f.input(dy), window);
    return f.finish();
  }
  const char* op = "cpu avg_pool2d_backward";
  const PoolPlanes p = pool_planes(dx, dy, op);
  dispatch_floating(dx.dtype, op, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const std::int64_t cost = p.out_plane() * window.kernel_h * window.kernel_w;
    parallel_for(p.planes, cost, [&](std::int64_t begin, std::int64_t end) {
      for (std::int64_t plane = begin; plane < end; ++plane)
        avg_backward_plane(p, window, dx.ptr<T>() + plane * p.plane(),
                           dy.ptr<const T>() + plane * p.out_plane());
    });
  });
}

}  // namespace normgrad::backend::cpu
