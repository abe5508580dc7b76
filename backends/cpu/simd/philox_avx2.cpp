#include "backends/cpu/simd/philox_avx2.h"

#include <algorithm>
#include <cmath>

#include "backends/philox.h"

#if defined(__x86_64__)
#include <immintrin.h>

// AVX2 without FMA: the scalar reference computes low + u (high - low) as a product and a sum,
// each rounded, and a fused multiply-add here would round once and differ in the last bit.
#define NORMGRAD_AVX2_NO_FMA __attribute__((target("avx2")))

namespace normgrad::backend::cpu {

namespace {

// The high 32 bits of multiplier x c in each of the 8 lanes: _mm256_mul_epu32 multiplies the
// even lanes into 64-bit products, so the odd lanes go through it shifted down by one lane.
NORMGRAD_AVX2_NO_FMA inline __m256i high_halves(__m256i multiplier, __m256i c) {
  const __m256i even = _mm256_mul_epu32(multiplier, c);
  const __m256i odd = _mm256_mul_epu32(multiplier, _mm256_srli_epi64(c, 32));
  return _mm256_blend_epi32(_mm256_srli_epi64(even, 32), odd, 0xAA);
}

// The first Philox word of counters (low[k], high[k], 0, 0) under key (key0, key1): the ten
// rounds of philox::philox4x32_10, one counter a lane.
NORMGRAD_AVX2_NO_FMA inline __m256i first_words(__m256i low, __m256i high, std::uint32_t key0,
                                                std::uint32_t key1) {
  const __m256i multiplier_0 = _mm256_set1_epi32(static_cast<int>(philox::round_multiplier_0));
  const __m256i multiplier_1 = _mm256_set1_epi32(static_cast<int>(philox::round_multiplier_1));
  __m256i c0 = low, c1 = high, c2 = _mm256_setzero_si256(), c3 = _mm256_setzero_si256();
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {
      key0 += philox::key_increment_0;
      key1 += philox::key_increment_1;
    }
    const __m256i high_1 = high_halves(multiplier_1, c2);
    const __m256i low_1 = _mm256_mullo_epi32(multiplier_1, c2);
    const __m256i high_0 = high_halves(multiplier_0, c0);
    const __m256i low_0 = _mm256_mullo_epi32(multiplier_0, c0);
    c0 = _mm256_xor_si256(_mm256_xor_si256(high_1, c1), _mm256_set1_epi32(static_cast<int>(key0)));
    c1 = low_1;
    c2 = _mm256_xor_si256(_mm256_xor_si256(high_0, c3), _mm256_set1_epi32(static_cast<int>(key1)));
    c3 = low_0;
  }
  return c0;
}

// Eight uniforms from counters first .. first + 7.
NORMGRAD_AVX2_NO_FMA inline __m256 eight_uniforms(std::uint64_t seed, std::uint64_t first,
                                                  __m256d low, __m256d range, __m256 high,
                                                  __m256 below_high, bool nudge) {
  // Counter halves: the low words count up from first's; a lane that wrapped past 2^32
  // carries one into its high word (unsigned comparison through the sign bit).
  const __m256i sign = _mm256_set1_epi32(static_cast<int>(0x80000000u));
  const __m256i start = _mm256_set1_epi32(static_cast<int>(static_cast<std::uint32_t>(first)));
  const __m256i counter_low = _mm256_add_epi32(start, _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  const __m256i wrapped =
      _mm256_cmpgt_epi32(_mm256_xor_si256(start, sign), _mm256_xor_si256(counter_low, sign));
  const __m256i counter_high = _mm256_sub_epi32(
      _mm256_set1_epi32(static_cast<int>(static_cast<std::uint32_t>(first >> 32))), wrapped);
  const __m256i word = first_words(counter_low, counter_high, static_cast<std::uint32_t>(seed),
                                   static_cast<std::uint32_t>(seed >> 32));
  // u = (word >> 8) 2^-24, exact in float32; then low + u (high - low) in double.
  const __m256 u =
      _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_srli_epi32(word, 8)), _mm256_set1_ps(0x1p-24f));
  const __m256d first_half =
      _mm256_add_pd(low, _mm256_mul_pd(_mm256_cvtps_pd(_mm256_castps256_ps128(u)), range));
  const __m256d second_half =
      _mm256_add_pd(low, _mm256_mul_pd(_mm256_cvtps_pd(_mm256_extractf128_ps(u, 1)), range));
  const __m256 value = _mm256_insertf128_ps(_mm256_castps128_ps256(_mm256_cvtpd_ps(first_half)),
                                            _mm256_cvtpd_ps(second_half), 1);
  if (!nudge) return value;
  return _mm256_blendv_ps(value, below_high, _mm256_cmp_ps(value, high, _CMP_NLT_UQ));
}

NORMGRAD_AVX2_NO_FMA void uniform_floats(float* out, std::int64_t count, std::uint64_t seed,
                                         std::uint64_t first, double low, double high) {
  const auto typed_high = static_cast<float>(high);
  const __m256d low_lanes = _mm256_set1_pd(low);
  const __m256d range = _mm256_set1_pd(high - low);
  const __m256 high_lanes = _mm256_set1_ps(typed_high);
  const __m256 below_high = _mm256_set1_ps(std::nextafter(typed_high, static_cast<float>(low)));
  const bool nudge = high > low;
  std::int64_t i = 0;
  for (; i + 8 <= count; i += 8)
    _mm256_storeu_ps(out + i, eight_uniforms(seed, first + static_cast<std::uint64_t>(i), low_lanes,
                                             range, high_lanes, below_high, nudge));
  if (i < count) {
    alignas(32) float tail[8];
    _mm256_store_ps(tail, eight_uniforms(seed, first + static_cast<std::uint64_t>(i), low_lanes,
                                         range, high_lanes, below_high, nudge));
    std::copy(tail, tail + (count - i), out + i);
  }
}

}  // namespace

bool uniform_floats_avx2(float* out, std::int64_t count, std::uint64_t seed, std::uint64_t first,
                         double low, double high) {
  static const bool available = __builtin_cpu_supports("avx2") != 0;
  if (!available) return false;
  uniform_floats(out, count, seed, first, low, high);
  return true;
}

}  // namespace normgrad::backend::cpu

#else

namespace normgrad::backend::cpu {

bool uniform_floats_avx2(float*, std::int64_t, std::uint64_t, std::uint64_t, double, double) {
  return false;
}

}  // namespace normgrad::backend::cpu

#endif
