#pragma once
// A convolution and its weight gradient as GEMMs whose operand of im2col's columns is packed
// straight from the image: the loops of sgemm_packed.h with packings of their own. x86-64
// only, like the micro-kernels (sgemm_avx2.cpp, sgemm_avx512.cpp), whose files instantiate
// these templates; the packing uses AVX2, which every CPU with AVX-512 has as well.
//
// The convolution by columns (backends/conv_by_columns.h) writes the columns X = im2col(x[n])
// ([K, L]: K = C kh kw taps, L = OH OW outputs; kh kw times the image) to memory, and the
// GEMM reads them back to pack its slivers. Here the slivers are packed from the image itself.
// Element (t, l) of X, tap t = (c, i, j) at output l = (oh, ow), is
//   x[n, c, oh stride_h + i dilation_h - padding_h, ow stride_w + j dilation_w - padding_w]
// or 0 where that falls in the padding. Along one output row with a horizontal stride of 1,
// a tap sees a run of consecutive pixels of one image row, with zeros at the ends where it
// sees padding: the packing loads such runs whole, masking off the padding.
//
// - The convolution, y[n] = W X[n] (+ bias), is one GEMM a sample with B = X[n]: a sliver of
//   B holds kernel_cols consecutive outputs, each tap's run of them a row of the sliver. The
//   product is written straight into y[n] ([O, L], row o at y[n] + o L), so the output needs
//   no reordering either; the bias, when there is one, is written into y first for the
//   product to be added to.
// - The weight gradient, dW = sum over n of dY[n] X[n]^T, is one GEMM whose inner dimension
//   runs over every output of every sample (N L terms): A = dy, read as [O, N L] a sample at
//   a time, and B = the columns transposed, a sliver of kernel_cols taps whose rows are
//   outputs: runs of 8 outputs of 8 taps are loaded and transposed in registers.

#if defined(__x86_64__)

#include <omp.h>

#include <algorithm>
#include <cstdint>

#include "backends/cpu/gemm/avx2_registers.h"
#include "backends/cpu/gemm/sgemm_packed.h"

namespace normgrad::backend::cpu {

namespace packed_conv_detail {

// Kernel tap (c, i, j) of the columns' row t = c kh kw + i kw + j, stepped through the rows
// in order without a division each.
struct Tap {
  std::int64_t c, i, j;
  Tap(std::int64_t t, const Window2d& w)
      : c(t / (w.kernel_h * w.kernel_w)),
        i(t % (w.kernel_h * w.kernel_w) / w.kernel_w),
        j(t % w.kernel_w) {}
  void next(const Window2d& w) {
    if (++j < w.kernel_w) return;
    j = 0;
    if (++i < w.kernel_h) return;
    i = 0;
    ++c;
  }
};

// Values [q, q + 8) of a run whose value r is row[start + r] for r in [lo, hi) and 0
// elsewhere; the lanes outside [lo, hi) are never read.
struct Run {
  const float* row = nullptr;
  std::int64_t start = 0, lo = 0, hi = 0;
};

NORMGRAD_AVX2 inline __m256 load_eight(const Run& run, std::int64_t q) {
  const std::int64_t lo = run.lo - q, hi = run.hi - q;
  if (hi <= 0 || lo >= 8 || hi <= lo) return _mm256_setzero_ps();
  const float* at = run.row + (run.start + q);
  if (lo <= 0 && hi >= 8) return _mm256_loadu_ps(at);
  return _mm256_maskload_ps(at, avx2::lanes_between(lo, hi));
}

// The images of a batch and the window that makes their columns.
struct Images {
  const float* x;  // [N, C, H, W]
  std::int64_t channels, height, width, out_h, out_w;
  Window2d window;
  std::int64_t plane() const { return height * width; }
  // 1x1 with stride 1 and no padding: X[n] is x[n] itself, as [C, H W].
  bool identity() const {
    return window.kernel_h == 1 && window.kernel_w == 1 && window.stride_h == 1 &&
           window.stride_w == 1 && window.padding_h == 0 && window.padding_w == 0;
  }
};

// Where each tap of the columns' rows [first, first + count) looks: the offset of its channel's
// plane, and its row and column relative to an output's origin (oh stride_h, ow stride_w).
template <std::int64_t MaxTaps> struct TapTable {
  std::int64_t plane_offset[MaxTaps], row_shift[MaxTaps], col_shift[MaxTaps];
  TapTable(const Images& b, std::int64_t first, std::int64_t count) {
    const Window2d& w = b.window;
    Tap tap(first, w);
    for (std::int64_t t = 0; t < count; ++t, tap.next(w)) {
      plane_offset[t] = tap.c * b.plane();
      row_shift[t] = tap.i * w.dilation_h - w.padding_h;
      col_shift[t] = tap.j * w.dilation_w - w.padding_w;
    }
  }
};

// B = X[n] for the convolution: slivers of Cols outputs (Kernel::pack_b's layout: sliver s
// at packed + s Cols kc, element (p, jj) at p Cols + jj) of the columns' rows [pc, pc + kc)
// (at most MaxTaps) and outputs [jc, jc + nc); outputs past nc are zeros.
template <std::int64_t Cols, std::int64_t MaxTaps>
NORMGRAD_AVX2 void pack_columns(const Images& b, std::int64_t sample, std::int64_t pc,
                                std::int64_t kc, std::int64_t jc, std::int64_t nc, float* packed) {
  const Window2d& w = b.window;
  const float* image = b.x + sample * b.channels * b.plane();
  const TapTable<MaxTaps> taps(b, pc, kc);
  for (std::int64_t first = 0; first < nc; first += Cols) {
    const std::int64_t count = std::min(Cols, nc - first);
    const std::int64_t oh = (jc + first) / b.out_w, ow = (jc + first) % b.out_w;
    float* out = packed + first * kc;
    if (w.stride_w == 1 && ow + count <= b.out_w) {
      // One output row: tap p reads image row h from column start on, all of it inside the
      // image or a part, the rest padding.
      for (std::int64_t p = 0; p < kc; ++p) {
        float* to = out + p * Cols;
        const std::int64_t h = oh * w.stride_h + taps.row_shift[p];
        const std::int64_t start = ow + taps.col_shift[p];
        Run run;
        if (h >= 0 && h < b.height) {
          run.row = image + taps.plane_offset[p] + h * b.width;
          run.start = start;
          if (count == Cols && start >= 0 && start + Cols <= b.width) {
            for (std::int64_t g = 0; g < Cols; g += 8)
              _mm256_storeu_ps(to + g, _mm256_loadu_ps(run.row + start + g));
            continue;
          }
          run.lo = std::clamp<std::int64_t>(-start, 0, count);
          run.hi = std::clamp<std::int64_t>(b.width - start, run.lo, count);
        }
        for (std::int64_t g = 0; g < Cols; g += 8) _mm256_storeu_ps(to + g, load_eight(run, g));
      }
    } else {
      // Outputs on more than one row, or strided: each output's own origin.
      std::int64_t row_origin[Cols], col_origin[Cols];
      for (std::int64_t jj = 0; jj < count; ++jj) {
        const std::int64_t l = jc + first + jj;
        row_origin[jj] = l / b.out_w * w.stride_h;
        col_origin[jj] = l % b.out_w * w.stride_w;
      }
      for (std::int64_t p = 0; p < kc; ++p) {
        float* to = out + p * Cols;
        const float* plane = image + taps.plane_offset[p];
        for (std::int64_t jj = 0; jj < Cols; ++jj) {
          const std::int64_t h = jj < count ? row_origin[jj] + taps.row_shift[p] : -1;
          const std::int64_t col = jj < count ? col_origin[jj] + taps.col_shift[p] : -1;
          to[jj] =
              h >= 0 && h < b.height && col >= 0 && col < b.width ? plane[h * b.width + col] : 0.0f;
        }
      }
    }
  }
}

// `depth` rows of a sliver of Cols columns, column jj's values being runs[jj]: 8 rows of 8
// columns at a time loaded as 8 vectors (one a column) and transposed, the last rows one by
// one.
template <std::int64_t Cols>
NORMGRAD_AVX2 void pack_runs(std::int64_t depth, const Run* runs, float* out) {
  std::int64_t q = 0;
  for (; q + 8 <= depth; q += 8)
    for (std::int64_t g = 0; g < Cols; g += 8) {
      __m256 r[8];
#pragma GCC unroll 8
      for (int t = 0; t < 8; ++t) r[t] = load_eight(runs[g + t], q);
      avx2::transpose_8x8(r);
#pragma GCC unroll 8
      for (int t = 0; t < 8; ++t) _mm256_storeu_ps(out + (q + t) * Cols + g, r[t]);
    }
  for (; q < depth; ++q)
    for (std::int64_t jj = 0; jj < Cols; ++jj) {
      const Run& run = runs[jj];
      out[q * Cols + jj] = q >= run.lo && q < run.hi ? run.row[run.start + q] : 0.0f;
    }
}

// B = the columns of every sample, transposed ([N L, K]), for the weight gradient: slivers of
// Cols taps [jc, jc + nc) (taps past nc zeros) over the outputs [pc, pc + kc) of the batch,
// output d being output d % L of sample d / L. The outputs are taken in runs along which
// every tap's pixels are consecutive: the rest of an output row when the horizontal stride
// is 1, the rest of the sample when the columns are the image itself, else one output.
template <std::int64_t Cols>
NORMGRAD_AVX2 void pack_transposed_columns(const Images& b, std::int64_t pc, std::int64_t kc,
                                           std::int64_t jc, std::int64_t nc, float* packed) {
  const Window2d& w = b.window;
  const std::int64_t outputs = b.out_h * b.out_w;
  for (std::int64_t first = 0; first < nc; first += Cols) {
    const std::int64_t count = std::min(Cols, nc - first);
    float* out = packed + first * kc;
    const TapTable<Cols> taps(b, jc + first, count);
    Run runs[Cols];
    for (std::int64_t q = 0; q < kc;) {
      const std::int64_t sample = (pc + q) / outputs, l = (pc + q) % outputs;
      const std::int64_t oh = l / b.out_w, ow = l % b.out_w;
      const float* image = b.x + sample * b.channels * b.plane();
      const std::int64_t length = b.identity()      ? std::min(outputs - l, kc - q)
                                  : w.stride_w == 1 ? std::min(b.out_w - ow, kc - q)
                                                    : 1;
      for (std::int64_t jj = 0; jj < count; ++jj) {
        if (b.identity()) {
          runs[jj] = Run{image + taps.plane_offset[jj], l, 0, length};
          continue;
        }
        const std::int64_t h = oh * w.stride_h + taps.row_shift[jj];
        if (h < 0 || h >= b.height) {
          runs[jj] = Run{};
          continue;
        }
        const std::int64_t start = ow * w.stride_w + taps.col_shift[jj];
        const std::int64_t lo = std::clamp<std::int64_t>(-start, 0, length);
        runs[jj] = Run{image + taps.plane_offset[jj] + h * b.width, start, lo,
                       std::clamp<std::int64_t>(b.width - start, lo, length)};
      }
      pack_runs<Cols>(length, runs, out + q * Cols);
      q += length;
    }
  }
}

// Threads for a product of `work` multiply-adds: as many as there are, but none for less
// than macs_per_thread() of them (parallel_cost.h).
inline int threads_for(std::int64_t work) {
  const int wanted = omp_in_parallel() ? 1 : omp_get_max_threads();
  return static_cast<int>(
      std::max<std::int64_t>(1, std::min<std::int64_t>(wanted, work / macs_per_thread())));
}

}  // namespace packed_conv_detail

// y[n] = w im2col(x[n]) (+ bias) for every sample (ConvProblem in sgemm_packed.h). The work
// is cut into units of one sample's outputs (or a part of them, when there are fewer than
// three samples a thread), taken by the threads as they come; every output is computed by
// one thread in a fixed order, so results do not depend on the thread count.
template <class Kernel> void packed_conv(const ConvProblem& problem) {
  using namespace packed_gemm_detail;
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
  const int threads = packed_conv_detail::threads_for(batch * m * n * k);
  const std::int64_t col_tiles = (n + kn - 1) / kn;
  const std::int64_t parts =
      std::clamp<std::int64_t>((3 * threads + batch - 1) / batch, 1, col_tiles);
  const std::int64_t part_tiles = (col_tiles + parts - 1) / parts;
  const std::int64_t rows_padded = (m + kr - 1) / kr * kr;
  const bool whole_a = m * k <= packed_gemm_whole_a;
  static thread_local Buffer whole_a_buffer;
  float* packed_a = whole_a ? whole_a_buffer.at_least(rows_padded * k) : nullptr;
  const StridedMatrix a{problem.weight, k, 1};
  const packed_conv_detail::Images images{problem.x,     problem.channels, problem.height,
                                          problem.width, problem.out_h,    problem.out_w,
                                          window};
#pragma omp parallel num_threads(threads)
  {
    if (whole_a) pack_whole_a<Kernel>(m, k, a, packed_a);
    const auto block_a = blocks_of_a<Kernel>(packed_a, rows_padded, a);
#pragma omp for schedule(dynamic, 1)
    for (std::int64_t unit = 0; unit < batch * parts; ++unit) {
      const std::int64_t sample = unit / parts, part = unit % parts;
      const std::int64_t col_begin = std::min(n, part * part_tiles * kn);
      const std::int64_t col_end = std::min(n, (part + 1) * part_tiles * kn);
      if (col_begin == col_end) continue;
      const auto pack_b = [&images, sample](std::int64_t pc, std::int64_t kc, std::int64_t jc,
                                            std::int64_t nc, float* packed) {
        packed_conv_detail::pack_columns<kn, Kernel::block_depth>(images, sample, pc, kc, jc, nc,
                                                                  packed);
      };
      float* c = problem.y + sample * m * n;
      if (problem.bias != nullptr)
        for (std::int64_t row = 0; row < m; ++row)
          std::fill(c + row * n + col_begin, c + row * n + col_end, problem.bias[row]);
      gemm_part<Kernel>(0, m, col_begin, col_end, k, block_a, pack_b, c, n,
                        problem.bias != nullptr);
    }
  }
}

// dw = sum over n of dy[n] im2col(x[n])^T (ConvWeightGradient in sgemm_packed.h). The threads
// share dW's columns (taps), a contiguous range of whole tiles each: every thread packs the
// rows of dy it needs for itself, so more, smaller shares would pack dy more often. Every
// element is summed over the batch's outputs in order by one thread, so results do not depend
// on the thread count.
template <class Kernel> void packed_conv_weight_gradient(const ConvWeightGradient& problem) {
  using namespace packed_gemm_detail;
  constexpr std::int64_t kn = Kernel::kernel_cols;
  const Window2d& window = problem.window;
  const std::int64_t m = problem.out_channels;
  const std::int64_t n = problem.channels * window.kernel_h * window.kernel_w;
  const std::int64_t outputs = problem.out_h * problem.out_w, depth = problem.batch * outputs;
  if (m == 0 || n == 0) return;
  if (depth == 0) {
    std::fill(problem.dw, problem.dw + m * n, 0.0f);
    return;
  }
  const int threads = packed_conv_detail::threads_for(m * n * depth);
  const std::int64_t col_tiles = (n + kn - 1) / kn;
  const std::int64_t units = std::min<std::int64_t>(threads, col_tiles);
  const packed_conv_detail::Images images{problem.x,     problem.channels, problem.height,
                                          problem.width, problem.out_h,    problem.out_w,
                                          window};
  // Rows [ic, ic + mc) of dy as [O, N L], terms [pc, pc + kc): each sample's stretch of terms
  // is a row-major block of dy[n].
  const auto block_a = [&problem, m, outputs](std::int64_t ic, std::int64_t mc, std::int64_t pc,
                                              std::int64_t kc, float* scratch) -> const float* {
    for (std::int64_t ir = 0; ir < mc; ir += Kernel::kernel_rows)
      for (std::int64_t q = 0; q < kc;) {
        const std::int64_t sample = (pc + q) / outputs, l = (pc + q) % outputs;
        const std::int64_t length = std::min(outputs - l, kc - q);
        Kernel::pack_a_sliver(std::min(Kernel::kernel_rows, mc - ir), length,
                              problem.dy + (sample * m + ic + ir) * outputs + l, outputs, 1,
                              scratch + ir * kc + q * Kernel::kernel_rows);
        q += length;
      }
    return scratch;
  };
  const auto pack_b = [&images](std::int64_t pc, std::int64_t kc, std::int64_t jc, std::int64_t nc,
                                float* packed) {
    packed_conv_detail::pack_transposed_columns<kn>(images, pc, kc, jc, nc, packed);
  };
#pragma omp parallel for num_threads(threads) schedule(static, 1)
  for (std::int64_t unit = 0; unit < units; ++unit) {
    const std::int64_t col_begin = std::min(n, col_tiles * unit / units * kn);
    const std::int64_t col_end = std::min(n, col_tiles * (unit + 1) / units * kn);
    if (col_begin < col_end)
      gemm_part<Kernel>(0, m, col_begin, col_end, depth, block_a, pack_b, problem.dw, n, false);
  }
}

}  // namespace normgrad::backend::cpu

#endif
