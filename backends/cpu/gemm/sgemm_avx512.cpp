// float32 GEMM with AVX-512: the micro-kernel and B's packing for the loops of
// sgemm_packed.h (sgemm_avx512.h says why it is here).

#include "backends/cpu/gemm/sgemm_avx512.h"

#include <algorithm>

#include "backends/cpu/gemm/sgemm_conv.h"
#include "backends/cpu/gemm/sgemm_packed.h"
#include "base/error.h"

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

#if defined(__x86_64__)
#define NORMGRAD_AVX512 __attribute__((target("avx512f")))

struct Avx512Kernel {
  // The micro-kernel's tile: 12 rows of 32 columns, 24 of the 32 vector registers of 16 floats
  // as accumulators. Each step of the inner dimension loads two vectors of B and broadcasts 12
  // values of A into 24 fused multiply-adds: the two FMA units stay busy, and loads (14 per 24
  // FMAs) keep up.
  static constexpr std::int64_t kernel_rows = 12, kernel_cols = 32;
  // kc: a B sliver, kc x 32 floats, is 32 KiB (the L1 cache holds 48 KiB on the CPUs this was
  // tuned on); mc: an A block, mc x kc, is 240 KiB of the 1 MiB L2; nc: a B panel, 2 MiB.
  static constexpr std::int64_t block_depth = 256, block_rows = 240, block_cols = 2048;

  static void pack_a_sliver(std::int64_t rows, std::int64_t depth, const float* a,
                            std::int64_t row_stride, std::int64_t col_stride, float* out) {
    packed_gemm_detail::pack_a_sliver<kernel_rows>(rows, depth, a, row_stride, col_stride, out);
  }
  static void pack_b(std::int64_t depth, std::int64_t cols, const float* b, std::int64_t row_stride,
                     std::int64_t col_stride, float* packed);
  static void micro_kernel(std::int64_t depth, const float* a, const float* b, float* c,
                           std::int64_t ldc, bool overwrite, std::int64_t rows, std::int64_t cols);
};

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
NORMGRAD_AVX512 void Avx512Kernel::pack_b(std::int64_t depth, std::int64_t cols, const float* b,
                                          std::int64_t row_stride, std::int64_t col_stride,
                                          float* packed) {
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
NORMGRAD_AVX512 void Avx512Kernel::micro_kernel(std::int64_t depth, const float* a, const float* b,
                                                float* c, std::int64_t ldc, bool overwrite,
                                                std::int64_t rows, std::int64_t cols) {
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

#endif

}  // namespace

const SimdGemm* avx512_gemm() {
#if defined(__x86_64__)
  static const SimdGemm gemm{"AVX-512", packed_gemm_suits<Avx512Kernel>, packed_gemm<Avx512Kernel>,
                             packed_conv<Avx512Kernel>, packed_conv_weight_gradient<Avx512Kernel>};
  static const bool allowed = [] {
    __builtin_cpu_init();
    return simd_gemm_allowed("NORMGRAD_CPU_AVX512_GEMM", __builtin_cpu_supports("avx512f") != 0);
  }();
  return allowed ? &gemm : nullptr;
#else
  return nullptr;
#endif
}

}  // namespace normgrad::backend::cpu
