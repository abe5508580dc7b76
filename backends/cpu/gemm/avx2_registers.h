#pragma once
// Register-level helpers of normgrad's AVX2 code (sgemm_avx2.cpp, sgemm_conv.h), for
// x86-64 only: lane masks for maskload and maskstore, and an 8 x 8 transpose.

#if defined(__x86_64__)

#include <immintrin.h>

#include <algorithm>
#include <cstdint>

// Compiles a function for AVX2 and FMA, whatever the flags of the file; callers check that
// the CPU has them first.
#define NORMGRAD_AVX2 __attribute__((target("avx2,fma")))

namespace normgrad::backend::cpu::avx2 {

// Lanes [0, count) of a vector of 8: all bits set, the rest 0 (for maskload and maskstore).
NORMGRAD_AVX2 inline __m256i first_lanes(std::int64_t count) {
  return _mm256_cmpgt_epi32(
      _mm256_set1_epi32(static_cast<int>(std::clamp<std::int64_t>(count, 0, 8))),
      _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

// r[k] = column k of the 8 x 8 block whose rows r held: pairs of rows interleaved, then
// pairs of pairs, then the 128-bit halves exchanged.
NORMGRAD_AVX2 inline __attribute__((always_inline)) void transpose_8x8(__m256 r[8]) {
  __m256 t[8];
#pragma GCC unroll 4
  for (int i = 0; i < 8; i += 2) {
    t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
    t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
  }
  // r[4h + c], half L: rows 4h .. 4h + 3 at column 4L + c.
#pragma GCC unroll 2
  for (int h = 0; h < 8; h += 4) {
    r[h] = _mm256_shuffle_ps(t[h], t[h + 2], _MM_SHUFFLE(1, 0, 1, 0));
    r[h + 1] = _mm256_shuffle_ps(t[h], t[h + 2], _MM_SHUFFLE(3, 2, 3, 2));
    r[h + 2] = _mm256_shuffle_ps(t[h + 1], t[h + 3], _MM_SHUFFLE(1, 0, 1, 0));
    r[h + 3] = _mm256_shuffle_ps(t[h + 1], t[h + 3], _MM_SHUFFLE(3, 2, 3, 2));
  }
#pragma GCC unroll 4
  for (int c = 0; c < 4; ++c) {
    t[c] = _mm256_permute2f128_ps(r[c], r[4 + c], 0x20);
    t[4 + c] = _mm256_permute2f128_ps(r[c], r[4 + c], 0x31);
  }
#pragma GCC unroll 8
  for (int c = 0; c < 8; ++c) r[c] = t[c];
}

// Lanes [first, last) of a vector of 8: all bits set, the rest 0.
NORMGRAD_AVX2 inline __m256i lanes_between(std::int64_t first, std::int64_t last) {
  return _mm256_andnot_si256(first_lanes(first), first_lanes(last));
}

}  // namespace normgrad::backend::cpu::avx2

#endif
