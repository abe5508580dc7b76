#pragma once
// A convolution as one GEMM a sample whose B operand, im2col's columns, is packed straight
// from the image: the loops of sgemm_packed.h with a packing of B of their own.
//
// The convolution by columns (backends/conv_by_columns.h) writes the columns X = im2col(x[n])
// ([C kh kw, OH OW], kh kw times the image) to memory, and the GEMM reads them back to pack
// its slivers of B. Here the slivers are packed from the image itself. Element (p, l) of X,
// tap p = (c, i, j) at output l = (oh, ow), is
//   x[n, c, oh stride_h + i dilation_h - padding_h, ow stride_w + j dilation_w - padding_w]
// or 0 where that falls in the padding. A sliver holds kernel_cols consecutive outputs. When
// they lie on one output row and the horizontal stride is 1, each tap's values are a run of
// consecutive pixels of one image row, with zeros at the ends where the tap sees padding:
// one copy a tap, as packing a written-out X would be. Slivers that wrap around to the next
// output row (outputs 6 wide, say) are gathered value by value.
//
// Each sample's product is written straight into y[n] ([O, OH OW], row o at y[n] + o OH OW),
// so the output needs no reordering either, and the bias, when there is one, is written
// into y first for the product to be added to.

#include <omp.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "backends/cpu/sgemm_packed.h"

namespace normgrad::backend::cpu {

namespace packed_conv_detail {

// The columns of one sample as a GEMM's B operand.
struct SampleColumns {
  const float* image;  // x[n], [C, H, W]
  std::int64_t height, width, out_w;
  Window2d window;
};

// Kernel tap (c, i, j) of the columns' row p = c kh kw + i kw + j, stepped through the rows
// in order without a division each.
struct Tap {
  std::int64_t c, i, j;
  Tap(std::int64_t p, const Window2d& w)
      : c(p / (w.kernel_h * w.kernel_w)),
        i(p % (w.kernel_h * w.kernel_w) / w.kernel_w),
        j(p % w.kernel_w) {}
  void next(const Window2d& w) {
    if (++j < w.kernel_w) return;
    j = 0;
    if (++i < w.kernel_h) return;
    i = 0;
    ++c;
  }
};

// The slivers of `Cols` columns (Kernel::pack_b's layout: sliver s at packed + s Cols kc,
// element (p, jj) of it at p Cols + jj) of the columns' rows [pc, pc + kc) and outputs
// [jc, jc + nc); outputs past nc are zeros.
template <std::int64_t Cols>
void pack_columns(const SampleColumns& b, std::int64_t pc, std::int64_t kc, std::int64_t jc,
                  std::int64_t nc, float* packed) {
  const Window2d& w = b.window;
  for (std::int64_t first = 0; first < nc; first += Cols) {
    const std::int64_t count = std::min(Cols, nc - first);
    const std::int64_t oh = (jc + first) / b.out_w, ow = (jc + first) % b.out_w;
    float* out = packed + first * kc;
    Tap tap(pc, w);
    if (w.stride_w == 1 && ow + count <= b.out_w) {
      // One output row: tap (c, i, j) reads image row h from column start on.
      const std::int64_t row_origin = oh * w.stride_h - w.padding_h, col_origin = ow - w.padding_w;
      for (std::int64_t p = 0; p < kc; ++p, tap.next(w)) {
        float* to = out + p * Cols;
        const std::int64_t h = row_origin + tap.i * w.dilation_h;
        const std::int64_t start = col_origin + tap.j * w.dilation_w;
        if (h < 0 || h >= b.height) {
          std::fill(to, to + Cols, 0.0f);
          continue;
        }
        // Outputs [lo, hi) of the sliver see pixels start + lo .. start + hi of the row.
        const float* row = b.image + (tap.c * b.height + h) * b.width;
        const std::int64_t lo = std::clamp<std::int64_t>(-start, 0, count);
        const std::int64_t hi = std::clamp<std::int64_t>(b.width - start, lo, count);
        if (lo == 0 && hi == Cols) {
          std::memcpy(to, row + start, Cols * sizeof(float));
        } else {
          std::fill(to, to + lo, 0.0f);
          std::copy(row + start + lo, row + start + hi, to + lo);
          std::fill(to + hi, to + Cols, 0.0f);
        }
      }
    } else {
      // Outputs on more than one row, or strided: each output's own origin.
      std::int64_t row_origin[Cols], col_origin[Cols];
      for (std::int64_t jj = 0; jj < count; ++jj) {
        const std::int64_t l = jc + first + jj;
        row_origin[jj] = l / b.out_w * w.stride_h - w.padding_h;
        col_origin[jj] = l % b.out_w * w.stride_w - w.padding_w;
      }
      for (std::int64_t p = 0; p < kc; ++p, tap.next(w)) {
        float* to = out + p * Cols;
        const float* plane = b.image + tap.c * b.height * b.width;
        for (std::int64_t jj = 0; jj < Cols; ++jj) {
          const std::int64_t h = jj < count ? row_origin[jj] + tap.i * w.dilation_h : -1;
          const std::int64_t col = jj < count ? col_origin[jj] + tap.j * w.dilation_w : -1;
          to[jj] =
              h >= 0 && h < b.height && col >= 0 && col < b.width ? plane[h * b.width + col] : 0.0f;
        }
      }
    }
  }
}

}  // namespace packed_conv_detail

// y[n] = w im2col(x[n]) (+ bias) for every sample (ConvProblem in sgemm_packed.h). The work
// is cut into units of one sample's outputs (or a part of them, when there are fewer than
// three samples a thread), taken by the threads as they come; every output is computed by
// one thread in a fixed order, so results do not depend on the thread count.
template <class Kernel> void packed_conv(const ConvProblem& problem) {
  using namespace packed_gemm_detail;
  using packed_conv_detail::SampleColumns;
  constexpr std::int64_t kr = Kernel::kernel_rows, kn = Kernel::kernel_cols;
  const Window2d& window = problem.window;
  const std::int64_t m = problem.out_channels, n = problem.out_h * problem.out_w;
  const std::int64_t k = problem.channels * window.kernel_h * window.kernel_w;
  const std::int64_t batch = problem.batch;
  if (batch == 0 || m == 0 || n == 0) return;
  if (k == 0) {  // no input channels: the bias alone
    for (std::int64_t row = 0; row < batch * m; ++row)
      std::fill(problem.y + row * n, problem.y + (row + 1) * n,
                problem.bias != nullptr ? problem.bias[row % m] : 0.0f);
    return;
  }
  const int wanted = omp_in_parallel() ? 1 : omp_get_max_threads();
  const int threads = static_cast<int>(std::max<std::int64_t>(
      1, std::min<std::int64_t>(wanted, batch * m * n * k / (std::int64_t{1} << 20))));
  const std::int64_t col_tiles = (n + kn - 1) / kn;
  const std::int64_t parts =
      std::clamp<std::int64_t>((3 * threads + batch - 1) / batch, 1, col_tiles);
  const std::int64_t part_tiles = (col_tiles + parts - 1) / parts;
  const std::int64_t rows_padded = (m + kr - 1) / kr * kr;
  const bool whole_a = m * k <= packed_gemm_whole_a;
  static thread_local Buffer whole_a_buffer;
  float* packed_a = whole_a ? whole_a_buffer.at_least(rows_padded * k) : nullptr;
  const StridedMatrix a{problem.weight, k, 1};
#pragma omp parallel num_threads(threads)
  {
    if (whole_a) pack_whole_a<Kernel>(m, k, a, packed_a);
#pragma omp for schedule(dynamic, 1)
    for (std::int64_t unit = 0; unit < batch * parts; ++unit) {
      const std::int64_t sample = unit / parts, part = unit % parts;
      const std::int64_t col_begin = std::min(n, part * part_tiles * kn);
      const std::int64_t col_end = std::min(n, (part + 1) * part_tiles * kn);
      if (col_begin == col_end) continue;
      const SampleColumns columns{
          problem.x + sample * problem.channels * problem.height * problem.width, problem.height,
          problem.width, problem.out_w, window};
      const auto pack_b = [&columns](std::int64_t pc, std::int64_t kc, std::int64_t jc,
                                     std::int64_t nc, float* packed) {
        packed_conv_detail::pack_columns<kn>(columns, pc, kc, jc, nc, packed);
      };
      float* c = problem.y + sample * m * n;
      if (problem.bias != nullptr)
        for (std::int64_t row = 0; row < m; ++row)
          std::fill(c + row * n + col_begin, c + row * n + col_end, problem.bias[row]);
      gemm_part<Kernel>(0, m, col_begin, col_end, k, packed_a, rows_padded, a, pack_b, c, n,
                        problem.bias != nullptr);
    }
  }
}

}  // namespace normgrad::backend::cpu
