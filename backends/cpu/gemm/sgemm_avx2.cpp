// float32 GEMM with AVX2 and FMA: the micro-kernel and B's packing for the loops of
// sgemm_packed.h (sgemm_avx2.h says why it is here).

#include "backends/cpu/gemm/sgemm_avx2.h"

#include <algorithm>

#include "backends/cpu/gemm/avx2_registers.h"
#include "backends/cpu/gemm/sgemm_conv.h"
#include "backends/cpu/gemm/sgemm_packed.h"
#include "base/error.h"

namespace normgrad::backend::cpu {

namespace {

#if defined(__x86_64__)
using avx2::first_lanes;
using avx2::transpose_8x8;

struct Avx2Kernel {
  // The micro-kernel's tile: 6 rows of 16 columns, 12 of the 16 vector registers of 8 floats
  // as accumulators. Each step of the inner dimension loads two vectors of B and broadcasts 6
  // values of A into 12 fused multiply-adds, which keeps the two FMA units busy.
  static constexpr std::int64_t kernel_rows = 6, kernel_cols = 16;
  // kc: a B sliver, kc x 16 floats, is 16 KiB of a 32 KiB L1 cache; mc: an A block, mc x kc,
  // is 144 KiB of a 512 KiB L2; nc: a B panel, 2 MiB.
  static constexpr std::int64_t block_depth = 256, block_rows = 144, block_cols = 2048;

  static void pack_a_sliver(std::int64_t rows, std::int64_t depth, const float* a,
                            std::int64_t row_stride, std::int64_t col_stride, float* out);
  static void pack_b(std::int64_t depth, std::int64_t cols, const float* b, std::int64_t row_stride,
                     std::int64_t col_stride, float* packed);
  static void micro_kernel(std::int64_t depth, const float* a, const float* b, float* c,
                           std::int64_t ldc, bool overwrite, std::int64_t rows, std::int64_t cols);
};

// A full sliver of a row-major A is transposed 8 terms at a time in registers (two rows of
// zeros make the block square), a transposed A is copied 6 values at a time; anything else
// goes term by term.
NORMGRAD_AVX2 void Avx2Kernel::pack_a_sliver(std::int64_t rows, std::int64_t depth, const float* a,
                                             std::int64_t row_stride, std::int64_t col_stride,
                                             float* out) {
  std::int64_t done = 0;  // terms packed
  if (rows == kernel_rows && col_stride == 1) {
    for (; done + 8 <= depth; done += 8) {
      __m256 r[8];
#pragma GCC unroll 6
      for (int i = 0; i < kernel_rows; ++i) r[i] = _mm256_loadu_ps(a + i * row_stride + done);
      r[6] = r[7] = _mm256_setzero_ps();
      transpose_8x8(r);
#pragma GCC unroll 8
      for (int c = 0; c < 8; ++c) {  // rows 0..5 of term done + c
        float* column = out + (done + c) * kernel_rows;
        _mm_storeu_ps(column, _mm256_castps256_ps128(r[c]));
        _mm_storel_pi(reinterpret_cast<__m64*>(column + 4), _mm256_extractf128_ps(r[c], 1));
      }
    }
  } else if (rows == kernel_rows && row_stride == 1) {
    for (; done < depth; ++done) {
      const float* column = a + done * col_stride;
      float* to = out + done * kernel_rows;
      _mm_storeu_ps(to, _mm_loadu_ps(column));
      _mm_storel_pi(reinterpret_cast<__m64*>(to + 4),
                    _mm_loadl_pi(_mm_setzero_ps(), reinterpret_cast<const __m64*>(column + 4)));
    }
  }
  packed_gemm_detail::pack_a_sliver<kernel_rows>(rows, depth - done, a + done * col_stride,
                                                 row_stride, col_stride, out + done * kernel_rows);
}

// A row-major B is copied row by row; a transposed one (a weight's gradient, B = X^T) is
// transposed 8 x 8 at a time in registers.
NORMGRAD_AVX2 void Avx2Kernel::pack_b(std::int64_t depth, std::int64_t cols, const float* b,
                                      std::int64_t row_stride, std::int64_t col_stride,
                                      float* packed) {
  for (std::int64_t first = 0; first < cols; first += kernel_cols) {
    const std::int64_t count = std::min(kernel_cols, cols - first);
    float* out = packed + first * depth;
    const float* in = b + first * col_stride;
    std::int64_t done = 0;  // terms packed
    if (col_stride == 1) {
      const __m256i left = first_lanes(count), right = first_lanes(count - 8);
      for (std::int64_t p = 0; p < depth; ++p) {
        const float* row = in + p * row_stride;
        _mm256_storeu_ps(out + p * kernel_cols, _mm256_maskload_ps(row, left));
        _mm256_storeu_ps(out + p * kernel_cols + 8, _mm256_maskload_ps(row + 8, right));
      }
      done = depth;
    } else if (row_stride == 1 && count == kernel_cols) {
      for (; done + 8 <= depth; done += 8)
        for (std::int64_t half = 0; half < kernel_cols; half += 8) {
          __m256 r[8];
#pragma GCC unroll 8
          for (int i = 0; i < 8; ++i) r[i] = _mm256_loadu_ps(in + (half + i) * col_stride + done);
          transpose_8x8(r);
#pragma GCC unroll 8
          for (int i = 0; i < 8; ++i) _mm256_storeu_ps(out + (done + i) * kernel_cols + half, r[i]);
        }
    }
    for (std::int64_t p = done; p < depth; ++p)
      for (std::int64_t j = 0; j < kernel_cols; ++j)
        out[p * kernel_cols + j] = j < count ? in[j * col_stride + p * row_stride] : 0.0f;
  }
}

// The sums run p = 0, 1, ... in one register per element, then meet C once.
NORMGRAD_AVX2 void Avx2Kernel::micro_kernel(std::int64_t depth, const float* a, const float* b,
                                            float* c, std::int64_t ldc, bool overwrite,
                                            std::int64_t rows, std::int64_t cols) {
  __m256 sum[kernel_rows][2];
#pragma GCC unroll 6
  for (int i = 0; i < kernel_rows; ++i) sum[i][0] = sum[i][1] = _mm256_setzero_ps();
  for (std::int64_t p = 0; p < depth; ++p) {
    const __m256 left = _mm256_loadu_ps(b), right = _mm256_loadu_ps(b + 8);
#pragma GCC unroll 6
    for (int i = 0; i < kernel_rows; ++i) {
      const __m256 value = _mm256_broadcast_ss(a + i);
      sum[i][0] = _mm256_fmadd_ps(value, left, sum[i][0]);
      sum[i][1] = _mm256_fmadd_ps(value, right, sum[i][1]);
    }
    a += kernel_rows;
    b += kernel_cols;
  }
  if (cols == kernel_cols) {
#pragma GCC unroll 6
    for (int i = 0; i < kernel_rows; ++i) {
      if (i >= rows) break;
      float* row = c + i * ldc;
      __m256 left = sum[i][0], right = sum[i][1];
      if (!overwrite) {
        left = _mm256_add_ps(_mm256_loadu_ps(row), left);
        right = _mm256_add_ps(_mm256_loadu_ps(row + 8), right);
      }
      _mm256_storeu_ps(row, left);
      _mm256_storeu_ps(row + 8, right);
    }
    return;
  }
  const __m256i left_mask = first_lanes(cols), right_mask = first_lanes(cols - 8);
#pragma GCC unroll 6
  for (int i = 0; i < kernel_rows; ++i) {
    if (i >= rows) break;
    float* row = c + i * ldc;
    __m256 left = sum[i][0], right = sum[i][1];
    if (!overwrite) {
      left = _mm256_add_ps(_mm256_maskload_ps(row, left_mask), left);
      right = _mm256_add_ps(_mm256_maskload_ps(row + 8, right_mask), right);
    }
    _mm256_maskstore_ps(row, left_mask, left);
    _mm256_maskstore_ps(row + 8, right_mask, right);
  }
}

#endif

}  // namespace

const SimdGemm* avx2_gemm() {
#if defined(__x86_64__)
  static const SimdGemm gemm{"AVX2", packed_gemm_suits<Avx2Kernel>, packed_gemm<Avx2Kernel>,
                             packed_conv<Avx2Kernel>, packed_conv_weight_gradient<Avx2Kernel>};
  static const bool allowed = [] {
    __builtin_cpu_init();
    return simd_gemm_allowed("NORMGRAD_CPU_AVX2_GEMM", __builtin_cpu_supports("avx2") != 0 &&
                                                           __builtin_cpu_supports("fma") != 0);
  }();
  return allowed ? &gemm : nullptr;
#else
  return nullptr;
#endif
}

}  // namespace normgrad::backend::cpu
