#pragma once
// The loops of normgrad's own float32 GEMM, C = A B (+ C) with C row-major, shared by its
// AVX-512 and AVX2 micro-kernels (sgemm_avx512.cpp, sgemm_avx2.cpp).
//
// The algorithm is the one of Goto and van de Geijn ("Anatomy of high-performance matrix
// multiplication", 2008), as BLIS structures it. A is copied ("packed") into slivers of
// kernel_rows rows, each contiguous for a slice of kc terms of the inner dimension. C is cut
// into panels of nc columns; for each slice of kc terms the slice of B is packed into slivers
// of kernel_cols columns, and the micro-kernel multiplies one sliver of A by one sliver of B
// into a kernel_rows x kernel_cols tile of C held in registers. The B sliver stays in the L1
// cache while the micro-kernel runs through a block of mc rows of A, which stays in L2;
// packing makes every operand layout (row-major, transposed, any strides) look the same to
// the micro-kernel, and pads the edges with zeros.
//
// Threads share C's columns (or its rows, when it has few columns) in units of whole tiles,
// taken as they come; every element of C is computed by one thread, its terms summed in the
// same order whoever computes it, so results do not depend on the thread count.
//
// A Kernel type supplies the ISA-specific parts:
//   static constexpr std::int64_t kernel_rows, kernel_cols;          the register tile
//   static constexpr std::int64_t block_depth, block_rows, block_cols;  kc, mc, nc
//   static void pack_a_sliver(rows, depth, a, row_stride, col_stride, out);
//       as packed_gemm_detail::pack_a_sliver<kernel_rows> below (which it may call)
//   static void pack_b(depth, cols, b, row_stride, col_stride, packed);
//       the slivers of B's columns [0, cols), k-major (element (p, j) of a sliver at
//       p kernel_cols + j), columns past `cols` zero
//   static void micro_kernel(depth, a_sliver, b_sliver, c, ldc, overwrite, rows, cols);
//       the tile (rows x cols of C) = [tile +] a_sliver b_sliver, the terms summed in order

#include <omp.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "backends/backend.h"
#include "backends/cpu/parallel_cost.h"
#include "base/error.h"

namespace normgrad::backend::cpu {

// Element (i, j) of a matrix operand is data[i * row_stride + j * col_stride].
struct StridedMatrix {
  const float* data;
  std::int64_t row_stride, col_stride;
};

// A convolution as one GEMM a sample, im2col's columns never written out (sgemm_conv.h):
// for every sample n, y[n] ([O, OH OW], row-major) = w ([O, C kh kw], row-major) times the
// columns of x[n] ([C, H, W]; backend.h's im2col gives their layout), plus bias[o] on row o
// when bias is not null. All arrays are contiguous.
struct ConvProblem {
  const float* x;
  std::int64_t batch, channels, height, width;
  const float* weight;
  const float* bias;
  std::int64_t out_channels;
  float* y;
  std::int64_t out_h, out_w;
  Window2d window;
};

// A convolution's weight gradient as one GEMM over the batch (sgemm_conv.h): dw ([O, C kh kw],
// row-major, overwritten) = the sum over n of dy[n] ([O, OH OW]) times the columns of x[n],
// transposed. All arrays are contiguous.
struct ConvWeightGradient {
  const float* x;
  std::int64_t batch, channels, height, width;
  const float* dy;
  std::int64_t out_channels, out_h, out_w;
  float* dw;
  Window2d window;
};

// One of normgrad's GEMMs, as matmul.cpp and the tests call it.
struct SimdGemm {
  const char* name;  // "AVX-512", "AVX2"
  // Whether the GEMM is worth calling for an m x n x k product (packed_gemm_suits).
  bool (*suits)(std::int64_t m, std::int64_t n, std::int64_t k);
  // c (m x n, row i at c + i ldc) = a (m x k) b (k x n), added to c with accumulate.
  void (*gemm)(std::int64_t m, std::int64_t n, std::int64_t k, StridedMatrix a, StridedMatrix b,
               float* c, std::int64_t ldc, bool accumulate);
  // The convolution of a ConvProblem (packed_conv in sgemm_conv.h).
  void (*conv)(const ConvProblem& problem);
  // The weight gradient of a ConvWeightGradient (packed_conv_weight_gradient in sgemm_conv.h).
  void (*conv_weight_gradient)(const ConvWeightGradient& problem);
};

// Whether a GEMM whose instructions the CPU has may run: not when `variable` is set to 0 in
// the environment (for comparisons and debugging).
inline bool simd_gemm_allowed(const char* variable, bool cpu_has_instructions) {
  const char* setting = std::getenv(variable);
  return cpu_has_instructions && !(setting && std::strcmp(setting, "0") == 0);
}

namespace packed_gemm_detail {

// A buffer kept by the thread that uses it: a fresh one per call would cost its page faults
// every time.
struct Buffer {
  struct Free {
    void operator()(float* block) const { std::free(block); }
  };
  std::unique_ptr<float[], Free> data;
  std::int64_t size = 0;
  float* at_least(std::int64_t count) {
    if (count > size) {
      const std::int64_t bytes = (count * 4 + 63) / 64 * 64;
      data.reset(static_cast<float*>(std::aligned_alloc(64, static_cast<std::size_t>(bytes))));
      NG_CHECK(data != nullptr, "cpu matmul", "out of memory allocating GEMM packing buffers");
      size = count;
    }
    return data.get();
  }
};

// A sliver of A, rows [0, Rows) from `a`, stored k-major: element (i, p) at p Rows + i, rows
// past `rows` zero. A row-major A is read a row at a time: reading its rows side by side would
// keep Rows streams a row stride apart, which for strides of a power of two (conv2d's dW,
// whose A has n L columns) fall in one set of the L1 cache.
template <std::int64_t Rows>
void pack_a_sliver(std::int64_t rows, std::int64_t depth, const float* a, std::int64_t row_stride,
                   std::int64_t col_stride, float* out) {
  if (col_stride == 1) {
    for (std::int64_t i = 0; i < Rows; ++i)
      for (std::int64_t p = 0; p < depth; ++p)
        out[p * Rows + i] = i < rows ? a[i * row_stride + p] : 0.0f;
  } else {
    for (std::int64_t p = 0; p < depth; ++p)
      for (std::int64_t i = 0; i < Rows; ++i)
        out[p * Rows + i] = i < rows ? a[i * row_stride + p * col_stride] : 0.0f;
  }
}

// The slivers of rows [first, first + rows) of A for terms [pc, pc + kc), one after another
// (sliver s at s kc kernel_rows).
template <class Kernel>
void pack_a_block(std::int64_t first, std::int64_t rows, std::int64_t pc, std::int64_t kc,
                  StridedMatrix a, float* out) {
  constexpr std::int64_t kr = Kernel::kernel_rows;
  for (std::int64_t ir = 0; ir < rows; ir += kr)
    Kernel::pack_a_sliver(std::min(kr, rows - ir), kc,
                          a.data + (first + ir) * a.row_stride + pc * a.col_stride, a.row_stride,
                          a.col_stride, out + ir * kc);
}

// The blocks of A for gemm_part, from A packed whole (block of terms [pc, pc + kc) at
// packed_a + pc rows_padded, as pack_whole_a leaves it) or, when packed_a is null, packed
// from `a` into the caller's scratch when they are needed.
template <class Kernel>
auto blocks_of_a(const float* packed_a, std::int64_t rows_padded, StridedMatrix a) {
  return [packed_a, rows_padded, a](std::int64_t ic, std::int64_t mc, std::int64_t pc,
                                    std::int64_t kc, float* scratch) -> const float* {
    if (packed_a != nullptr) return packed_a + pc * rows_padded + ic * kc;
    pack_a_block<Kernel>(ic, mc, pc, kc, a, scratch);
    return scratch;
  };
}

// Rows [row_begin, row_end) and columns [col_begin, col_end) of C on the calling thread.
// Either operand may be a matrix in memory or one made on the way, as a convolution's columns
// are (sgemm_conv.h):
// - block_a(ic, mc, pc, kc, scratch) gives the slivers of A's rows [ic, ic + mc) for terms
//   [pc, pc + kc) (pack_a_block's layout), packed into scratch (kc mc floats) or already
//   packed elsewhere;
// - pack_b(pc, kc, jc, nc, packed) packs the block of B's terms [pc, pc + kc) and columns
//   [jc, jc + nc) into slivers as Kernel::pack_b does.
template <class Kernel, class BlockA, class PackB>
void gemm_part(std::int64_t row_begin, std::int64_t row_end, std::int64_t col_begin,
               std::int64_t col_end, std::int64_t k, const BlockA& block_a, const PackB& pack_b,
               float* c, std::int64_t ldc, bool accumulate) {
  constexpr std::int64_t kr = Kernel::kernel_rows, kn = Kernel::kernel_cols;
  constexpr std::int64_t kc_max = Kernel::block_depth, mc_max = Kernel::block_rows,
                         nc_max = Kernel::block_cols;
  static thread_local Buffer panel, a_scratch;
  float* packed_b = panel.at_least(kc_max * nc_max);
  float* scratch = a_scratch.at_least(kc_max * mc_max);
  for (std::int64_t jc = col_begin; jc < col_end; jc += nc_max) {
    const std::int64_t nc = std::min(nc_max, col_end - jc);
    for (std::int64_t pc = 0; pc < k; pc += kc_max) {
      const std::int64_t kc = std::min(kc_max, k - pc);
      pack_b(pc, kc, jc, nc, packed_b);
      const bool overwrite = pc == 0 && !accumulate;
      for (std::int64_t ic = row_begin; ic < row_end; ic += mc_max) {
        const std::int64_t mc = std::min(mc_max, row_end - ic);
        const float* a_block = block_a(ic, mc, pc, kc, scratch);
        for (std::int64_t jr = 0; jr < nc; jr += kn)
          for (std::int64_t ir = 0; ir < mc; ir += kr)
            Kernel::micro_kernel(kc, a_block + ir * kc, packed_b + jr * kc,
                                 c + (ic + ir) * ldc + jc + jr, ldc, overwrite,
                                 std::min(kr, mc - ir), std::min(kn, nc - jr));
      }
    }
  }
}

// All of A (m x k) packed, block of terms [pc, pc + kc) at packed + pc rows_padded (rows_padded:
// m rounded up to whole slivers), its slivers one after another, shared out among the threads
// of the enclosing parallel region.
template <class Kernel>
void pack_whole_a(std::int64_t m, std::int64_t k, StridedMatrix a, float* packed) {
  constexpr std::int64_t kr = Kernel::kernel_rows, kc_max = Kernel::block_depth;
  const std::int64_t row_tiles = (m + kr - 1) / kr, rows_padded = row_tiles * kr;
  const std::int64_t depth_blocks = (k + kc_max - 1) / kc_max;
#pragma omp for schedule(static)
  for (std::int64_t item = 0; item < depth_blocks * row_tiles; ++item) {
    const std::int64_t pc = item / row_tiles * kc_max, first = item % row_tiles * kr;
    const std::int64_t kc = std::min(kc_max, k - pc);
    Kernel::pack_a_sliver(std::min(kr, m - first), kc,
                          a.data + first * a.row_stride + pc * a.col_stride, a.row_stride,
                          a.col_stride, packed + pc * rows_padded + first * kc);
  }
}

}  // namespace packed_gemm_detail

// A is packed whole, once, when it has at most this many values (a 16 MiB buffer that the
// calling thread keeps); a larger A is packed a block at a time by the thread that needs it.
constexpr std::int64_t packed_gemm_whole_a = std::int64_t{1} << 22;

// Whether the packed GEMM is worth calling for an m x n x k product: large enough to
// amortise the packing, and at least one tile high and wide.
template <class Kernel> bool packed_gemm_suits(std::int64_t m, std::int64_t n, std::int64_t k) {
  return m >= Kernel::kernel_rows && n >= Kernel::kernel_cols && k >= 16 &&
         m * n * k >= (std::int64_t{1} << 18);
}

// c (m x n, row i at c + i ldc) = a (m x k) b (k x n), added to c with accumulate.
template <class Kernel>
void packed_gemm(std::int64_t m, std::int64_t n, std::int64_t k, StridedMatrix a, StridedMatrix b,
                 float* c, std::int64_t ldc, bool accumulate) {
  using namespace packed_gemm_detail;
  constexpr std::int64_t kr = Kernel::kernel_rows, kn = Kernel::kernel_cols;
  // C is cut into units of whole tiles, along its columns when it has at least two tiles'
  // worth per thread (or more column tiles than row tiles), else along its rows; threads
  // take units as they finish their last. With about three units per thread, a thread that
  // loses its core for a while to another process leaves part of its share to the others
  // instead of holding up the whole product. Which thread computes a unit never changes
  // what it computes.
  const int wanted = omp_in_parallel() ? 1 : omp_get_max_threads();
  const int threads = static_cast<int>(
      std::max<std::int64_t>(1, std::min<std::int64_t>(wanted, m * n * k / macs_per_thread())));
  const std::int64_t col_tiles = (n + kn - 1) / kn;
  const std::int64_t row_tiles = (m + kr - 1) / kr;
  const bool whole_a = m * k <= packed_gemm_whole_a;
  // Without a packed A, units of columns would each pack all of A again: rows are split,
  // one unit per thread, and each unit packs its own rows of A and all of B.
  const bool split_columns = whole_a && (col_tiles >= 2 * threads || col_tiles >= row_tiles);
  const std::int64_t tiles = split_columns ? col_tiles : row_tiles;
  const std::int64_t unit = threads == 1 ? tiles
                            : whole_a    ? std::max<std::int64_t>(1, tiles / (3 * threads))
                                         : (tiles + threads - 1) / threads;
  const std::int64_t units = (tiles + unit - 1) / unit;
  // All of A is packed once, by all threads, before any unit starts.
  const std::int64_t rows_padded = row_tiles * kr;
  static thread_local Buffer whole_a_buffer;
  float* packed_a = whole_a ? whole_a_buffer.at_least(rows_padded * k) : nullptr;
#pragma omp parallel num_threads(threads)
  {
    if (whole_a) pack_whole_a<Kernel>(m, k, a, packed_a);
    const auto block_a = blocks_of_a<Kernel>(packed_a, rows_padded, a);
    const auto pack_b = [&b](std::int64_t pc, std::int64_t kc, std::int64_t jc, std::int64_t nc,
                             float* packed) {
      Kernel::pack_b(kc, nc, b.data + pc * b.row_stride + jc * b.col_stride, b.row_stride,
                     b.col_stride, packed);
    };
#pragma omp for schedule(dynamic, 1)
    for (std::int64_t u = 0; u < units; ++u) {
      const std::int64_t first = u * unit, last = std::min(tiles, first + unit);
      if (split_columns)
        gemm_part<Kernel>(0, m, first * kn, std::min(n, last * kn), k, block_a, pack_b, c, ldc,
                          accumulate);
      else
        gemm_part<Kernel>(first * kr, std::min(m, last * kr), 0, n, k, block_a, pack_b, c, ldc,
                          accumulate);
    }
  }
}

}  // namespace normgrad::backend::cpu
