// float32 GEMM with AVX-512 (sgemm_avx512.h gives the algorithm and why it is here).

#include "backends/cpu/sgemm_avx512.h"

#include <omp.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "core/error.h"

#if defined(__x86_64__)
// GCC 12's AVX-512 intrinsics fill don't-care operands from a variable initialised with
// itself, which -Wuninitialized (and, in the sanitizer build, -Wmaybe-uninitialized) reports
// wherever they are inlined: in this file's functions, so the warnings stay off for all of it.
#pragma GCC diagnostic ignored "-Wuninitialized"
#if !defined(__clang__)  // clang has no -Wmaybe-uninitialized
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>
#endif

namespace normgrad::backend::cpu {

namespace {

// The micro-kernel's tile: 12 rows of 32 columns, 24 of the 32 vector registers of 16 floats
// as accumulators. Each step of the inner dimension loads two vectors of B and broadcasts 12
// values of A into 24 fused multiply-adds: the two FMA units stay busy, and loads (14 per 24
// FMAs) keep up.
constexpr std::int64_t kernel_rows = 12, kernel_cols = 32;
// kc: a B sliver, kc x 32 floats, is 32 KiB (the L1 cache holds 48 KiB on the CPUs this was
// tuned on); mc: an A block, mc x kc, is 240 KiB of the 1 MiB L2; nc: a B panel, 2 MiB.
constexpr std::int64_t block_depth = 256, block_rows = 240, block_cols = 2048;

#if defined(__x86_64__)
#define NORMGRAD_AVX512 __attribute__((target("avx512f")))

// A sliver of A, rows [0, kernel_rows) from `a`, stored k-major: element (i, p) at
// p kernel_rows + i, rows past `rows` zero. A row-major A is read a row at a time: reading
// its 12 rows side by side would keep 12 streams a row stride apart, which for strides of a
// power of two (conv2d's dW, whose A has n L columns) fall in one set of the L1 cache.
void pack_a_sliver(std::int64_t rows, std::int64_t depth, const float* a, std::int64_t row_stride,
                   std::int64_t col_stride, float* out) {
  if (col_stride == 1) {
    for (std::int64_t i = 0; i < kernel_rows; ++i)
      for (std::int64_t p = 0; p < depth; ++p)
        out[p * kernel_rows + i] = i < rows ? a[i * row_stride + p] : 0.0f;
  } else {
    for (std::int64_t p = 0; p < depth; ++p)
      for (std::int64_t i = 0; i < kernel_rows; ++i)
        out[p * kernel_rows + i] = i < rows ? a[i * row_stride + p * col_stride] : 0.0f;
  }
}

// out row k (16 floats, out_stride apart) = column k of the 16 x 16 block at `in`: pairs of
// rows interleaved, then pairs of pairs, then the 128-bit lanes of four vectors transposed.
NORMGRAD_AVX512 void transpose_16x16(const float* in, std::int64_t in_stride, float* out,
                                     std::int64_t out_stride) {
  __m512 r[16], t[16];
#pragma GCC unroll 16
  for (int i = 0; i < 16; ++i) r[i] = _mm512_loadu_ps(in + i * in_stride);
#pragma GCC unroll 8
  for (int i = 0; i < 16; i += 2) {
    t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
    t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
  }
  // r[4g + c], lane L: rows 4g .. 4g + 3 at column 4L + c.
#pragma GCC unroll 4
  for (int g = 0; g < 16; g += 4) {
    r[g] = _mm512_shuffle_ps(t[g], t[g + 2], _MM_SHUFFLE(1, 0, 1, 0));
    r[g + 1] = _mm512_shuffle_ps(t[g], t[g + 2], _MM_SHUFFLE(3, 2, 3, 2));
    r[g + 2] = _mm512_shuffle_ps(t[g + 1], t[g + 3], _MM_SHUFFLE(1, 0, 1, 0));
    r[g + 3] = _mm512_shuffle_ps(t[g + 1], t[g + 3], _MM_SHUFFLE(3, 2, 3, 2));
  }
  // Column 4L + c, lane g, is lane L of r[4g + c].
#pragma GCC unroll 4
  for (int c = 0; c < 4; ++c) {
    const __m512 low_ab = _mm512_shuffle_f32x4(r[c], r[4 + c], _MM_SHUFFLE(1, 0, 1, 0));
    const __m512 high_ab = _mm512_shuffle_f32x4(r[c], r[4 + c], _MM_SHUFFLE(3, 2, 3, 2));
    const __m512 low_cd = _mm512_shuffle_f32x4(r[8 + c], r[12 + c], _MM_SHUFFLE(1, 0, 1, 0));
    const __m512 high_cd = _mm512_shuffle_f32x4(r[8 + c], r[12 + c], _MM_SHUFFLE(3, 2, 3, 2));
    _mm512_storeu_ps(out + c * out_stride,
                     _mm512_shuffle_f32x4(low_ab, low_cd, _MM_SHUFFLE(2, 0, 2, 0)));
    _mm512_storeu_ps(out + (4 + c) * out_stride,
                     _mm512_shuffle_f32x4(low_ab, low_cd, _MM_SHUFFLE(3, 1, 3, 1)));
    _mm512_storeu_ps(out + (8 + c) * out_stride,
                     _mm512_shuffle_f32x4(high_ab, high_cd, _MM_SHUFFLE(2, 0, 2, 0)));
    _mm512_storeu_ps(out + (12 + c) * out_stride,
                     _mm512_shuffle_f32x4(high_ab, high_cd, _MM_SHUFFLE(3, 1, 3, 1)));
  }
}

// The slivers of B's columns [0, cols), each kernel_cols wide, k-major: element (p, j) of a
// sliver at p kernel_cols + j, columns past `cols` zero. A row-major B is copied row by row;
// a transposed one (conv2d's dW, B = X^T) is transposed 16 x 16 at a time in registers, since
// one element at a time it cost as much as the products themselves.
NORMGRAD_AVX512 void pack_b(std::int64_t depth, std::int64_t cols, const float* b,
                            std::int64_t row_stride, std::int64_t col_stride, float* packed) {
  for (std::int64_t first = 0; first < cols; first += kernel_cols) {
    const std::int64_t count = std::min(kernel_cols, cols - first);
    float* out = packed + first * depth;
    const float* in = b + first * col_stride;
    std::int64_t done = 0;  // terms packed
    if (col_stride == 1) {
      // Two vectors per row, masked at the edge (a library copy call per 128 bytes cost more
      // than the copy).
      const __mmask16 left = count >= 16 ? 0xFFFF : static_cast<__mmask16>((1u << count) - 1);
      const __mmask16 right = count >= 32  ? 0xFFFF
                              : count > 16 ? static_cast<__mmask16>((1u << (count - 16)) - 1)
                                           : 0;
      for (std::int64_t p = 0; p < depth; ++p) {
        const float* row = in + p * row_stride;
        _mm512_storeu_ps(out + p * kernel_cols, _mm512_maskz_loadu_ps(left, row));
        _mm512_storeu_ps(out + p * kernel_cols + 16, _mm512_maskz_loadu_ps(right, row + 16));
      }
      done = depth;
    } else if (row_stride == 1 && count == kernel_cols) {
      for (; done + 16 <= depth; done += 16)
        for (std::int64_t half = 0; half < kernel_cols; half += 16)
          transpose_16x16(in + half * col_stride + done, col_stride,
                          out + done * kernel_cols + half, kernel_cols);
    }
    for (std::int64_t p = done; p < depth; ++p)
      for (std::int64_t j = 0; j < kernel_cols; ++j)
        out[p * kernel_cols + j] = j < count ? in[j * col_stride + p * row_stride] : 0.0f;
  }
}

// tile (rows x cols of C, row i at c + i ldc) = [tile +] a_sliver b_sliver over depth terms.
// The sums run p = 0, 1, ... in one register per element, then meet C once.
NORMGRAD_AVX512 void micro_kernel(std::int64_t depth, const float* a, const float* b, float* c,
                                  std::int64_t ldc, bool overwrite, std::int64_t rows,
                                  std::int64_t cols) {
  __m512 sum[kernel_rows][2];
#pragma GCC unroll 12
  for (int i = 0; i < kernel_rows; ++i) sum[i][0] = sum[i][1] = _mm512_setzero_ps();
  for (std::int64_t p = 0; p < depth; ++p) {
    const __m512 left = _mm512_loadu_ps(b), right = _mm512_loadu_ps(b + 16);
#pragma GCC unroll 12
    for (int i = 0; i < kernel_rows; ++i) {
      const __m512 value = _mm512_set1_ps(a[i]);
      sum[i][0] = _mm512_fmadd_ps(value, left, sum[i][0]);
      sum[i][1] = _mm512_fmadd_ps(value, right, sum[i][1]);
    }
    a += kernel_rows;
    b += kernel_cols;
  }
  const __mmask16 left_mask = cols >= 16 ? 0xFFFF : static_cast<__mmask16>((1u << cols) - 1);
  const __mmask16 right_mask = cols >= 32  ? 0xFFFF
                               : cols > 16 ? static_cast<__mmask16>((1u << (cols - 16)) - 1)
                                           : 0;
#pragma GCC unroll 12
  for (int i = 0; i < kernel_rows; ++i) {
    if (i >= rows) break;
    float* row = c + i * ldc;
    __m512 left = sum[i][0], right = sum[i][1];
    if (!overwrite) {
      left = _mm512_add_ps(_mm512_maskz_loadu_ps(left_mask, row), left);
      right = _mm512_add_ps(_mm512_maskz_loadu_ps(right_mask, row + 16), right);
    }
    _mm512_mask_storeu_ps(row, left_mask, left);
    _mm512_mask_storeu_ps(row + 16, right_mask, right);
  }
}

// Each thread's B panel, allocated on its first product and kept (a fresh 2 MiB block per
// call would cost its page faults every time), and the calling thread's buffer for all of A.
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

// Columns [col_begin, col_end) and rows [row_begin, row_end) of C on the calling thread, with
// A already packed: the block of terms [pc, pc + kc) holds all of A's slivers, rows_padded x
// kc floats from packed_a + pc rows_padded.
NORMGRAD_AVX512 void gemm_part(std::int64_t row_begin, std::int64_t row_end, std::int64_t col_begin,
                               std::int64_t col_end, std::int64_t k, const float* packed_a,
                               std::int64_t rows_padded, StridedMatrix b, float* c,
                               std::int64_t ldc, bool accumulate) {
  static thread_local Buffer panel;
  float* packed_b = panel.at_least(block_depth * block_cols);
  for (std::int64_t jc = col_begin; jc < col_end; jc += block_cols) {
    const std::int64_t nc = std::min(block_cols, col_end - jc);
    for (std::int64_t pc = 0; pc < k; pc += block_depth) {
      const std::int64_t kc = std::min(block_depth, k - pc);
      pack_b(kc, nc, b.data + pc * b.row_stride + jc * b.col_stride, b.row_stride, b.col_stride,
             packed_b);
      const bool overwrite = pc == 0 && !accumulate;
      for (std::int64_t ic = row_begin; ic < row_end; ic += block_rows) {
        const std::int64_t mc = std::min(block_rows, row_end - ic);
        const float* block_a = packed_a + pc * rows_padded + ic * kc;
        for (std::int64_t jr = 0; jr < nc; jr += kernel_cols)
          for (std::int64_t ir = 0; ir < mc; ir += kernel_rows)
            micro_kernel(kc, block_a + ir * kc, packed_b + jr * kc, c + (ic + ir) * ldc + jc + jr,
                         ldc, overwrite, std::min(kernel_rows, mc - ir),
                         std::min(kernel_cols, nc - jr));
      }
    }
  }
}
#endif

}  // namespace

bool avx512_gemm_available() {
#if defined(__x86_64__)
  static const bool available = [] {
    const char* setting = std::getenv("NORMGRAD_CPU_AVX512_GEMM");
    if (setting && std::strcmp(setting, "0") == 0) return false;
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f") != 0;
  }();
  return available;
#else
  return false;
#endif
}

bool avx512_gemm_suits(std::int64_t m, std::int64_t n, std::int64_t k) {
  // All of A is packed into a buffer that the calling thread keeps: at most 16 MiB of it.
  return m >= kernel_rows && n >= kernel_cols && k >= 16 && m * n * k >= (std::int64_t{1} << 18) &&
         m * k <= (std::int64_t{1} << 22);
}

void gemm_avx512(std::int64_t m, std::int64_t n, std::int64_t k, StridedMatrix a, StridedMatrix b,
                 float* c, std::int64_t ldc, bool accumulate) {
#if defined(__x86_64__)
  // C is cut into units of whole tiles, along its columns when it has at least two tiles'
  // worth per thread (or more column tiles than row tiles), else along its rows; threads
  // take units as they finish their last. With about three units per thread, a thread that
  // loses its core for a while to another process leaves part of its share to the others
  // instead of holding up the whole product. Which thread computes a unit never changes
  // what it computes.
  const int wanted = omp_in_parallel() ? 1 : omp_get_max_threads();
  const int threads = static_cast<int>(std::max<std::int64_t>(
      1, std::min<std::int64_t>(wanted, m * n * k / (std::int64_t{1} << 20))));
  const std::int64_t col_tiles = (n + kernel_cols - 1) / kernel_cols;
  const std::int64_t row_tiles = (m + kernel_rows - 1) / kernel_rows;
  const bool split_columns = col_tiles >= 2 * threads || col_tiles >= row_tiles;
  const std::int64_t tiles = split_columns ? col_tiles : row_tiles;
  const std::int64_t unit = threads > 1 ? std::max<std::int64_t>(1, tiles / (3 * threads)) : tiles;
  const std::int64_t units = (tiles + unit - 1) / unit;
  // All of A is packed once, by all threads, before any unit starts: units of columns would
  // otherwise each pack the same A again.
  const std::int64_t rows_padded = row_tiles * kernel_rows;
  const std::int64_t depth_blocks = (k + block_depth - 1) / block_depth;
  static thread_local Buffer whole_a;
  float* packed_a = whole_a.at_least(rows_padded * k);
#pragma omp parallel num_threads(threads)
  {
#pragma omp for schedule(static)
    for (std::int64_t item = 0; item < depth_blocks * row_tiles; ++item) {
      const std::int64_t pc = item / row_tiles * block_depth,
                         first = item % row_tiles * kernel_rows;
      const std::int64_t kc = std::min(block_depth, k - pc);
      pack_a_sliver(std::min(kernel_rows, m - first), kc,
                    a.data + first * a.row_stride + pc * a.col_stride, a.row_stride, a.col_stride,
                    packed_a + pc * rows_padded + first * kc);
    }
#pragma omp for schedule(dynamic, 1)
    for (std::int64_t u = 0; u < units; ++u) {
      const std::int64_t first = u * unit, last = std::min(tiles, first + unit);
      if (split_columns)
        gemm_part(0, m, first * kernel_cols, std::min(n, last * kernel_cols), k, packed_a,
                  rows_padded, b, c, ldc, accumulate);
      else
        gemm_part(first * kernel_rows, std::min(m, last * kernel_rows), 0, n, k, packed_a,
                  rows_padded, b, c, ldc, accumulate);
    }
  }
#else
  (void)m, (void)n, (void)k, (void)a, (void)b, (void)c, (void)ldc, (void)accumulate;
  throw Error("cpu matmul: the AVX-512 GEMM is not built for this CPU architecture");
#endif
}

}  // namespace normgrad::backend::cpu
