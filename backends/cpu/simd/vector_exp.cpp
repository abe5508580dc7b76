// The row functions of vector_exp.h: the portable loops, the AVX2+FMA kernels, and the choice
// between them. The math is described in vector_exp.h.
//
// The kernels are compiled for AVX2+FMA through a function attribute, not a compiler flag, so
// the rest of the library stays baseline x86-64 and runs on any CPU; they are only called after
// avx2_exp_available() has said yes. Vector helpers carry the same attribute so that they
// inline into the loops.

#include "backends/cpu/simd/vector_exp.h"

#include <cstring>
#include <limits>

#include "backends/cpu/elementwise_math.h"
#include "backends/cpu/pairwise.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace normgrad::backend::cpu {

namespace {

// ---- portable: the C library, one element at a time ---------------------------------------

void exp_row_portable(float* out, const float* in, std::int64_t count) {
  for (std::int64_t i = 0; i < count; ++i) out[i] = std::exp(in[i]);
}

void sigmoid_row_portable(float* out, const float* in, std::int64_t count) {
  for (std::int64_t i = 0; i < count; ++i) out[i] = sigmoid_value(in[i]);
}

void tanh_row_portable(float* out, const float* in, std::int64_t count) {
  for (std::int64_t i = 0; i < count; ++i) out[i] = std::tanh(in[i]);
}

float max_row_portable(const float* in, std::int64_t count) {
  return reduce_row<MaxCombine<float>>(in, count, 1);
}

double exp_shifted_sum_row_portable(float* out, const float* in, std::int64_t count, float shift) {
  double sum = 0.0;
  for (std::int64_t i = 0; i < count; ++i) {
    const float value = std::exp(in[i] - shift);
    if (out) out[i] = value;
    sum += value;
  }
  return sum;
}

// ---- AVX2 + FMA -----------------------------------------------------------------------------
#if defined(__x86_64__)

#define NORMGRAD_AVX2_FMA __attribute__((target("avx2,fma")))

// sigmoid_value's switch to e^x, for float.
constexpr float sigmoid_exp_limit = -127 * 0.6931471805599453f;
// Below this |x|, tanh uses its odd polynomial; see vector_exp.h.
constexpr float tanh_polynomial_limit = 0.625f;
// tanh a ~ a + a^3 (t0 + t1 a^2 + t2 a^4 + t3 a^6 + t4 a^8) on [0, 0.625].
constexpr float tanh_t0 = -0.333332807f;
constexpr float tanh_t1 = 0.133314058f;
constexpr float tanh_t2 = -0.0537365153f;
constexpr float tanh_t3 = 0.0206281673f;
constexpr float tanh_t4 = -0.0056922962f;

NORMGRAD_AVX2_FMA inline __m256 exp8(__m256 x) {
  namespace k = exp_constants;
  // Where every |x| <= 86, |n| <= 124 and every result is a normal float, 2^n can be added
  // into p's exponent field, which gives the same bits as the two products below, in fewer
  // operations; NaN fails the ordered comparison and takes the general path.
  const __m256 magnitude = _mm256_andnot_ps(_mm256_set1_ps(-0.0f), x);
  const bool all_normal =
      _mm256_movemask_ps(_mm256_cmp_ps(magnitude, _mm256_set1_ps(86.0f), _CMP_LE_OQ)) == 0xff;
  // min/max return their second operand when either is NaN: written this way round, NaN stays.
  if (!all_normal)
    x = _mm256_max_ps(_mm256_set1_ps(k::min_input), _mm256_min_ps(_mm256_set1_ps(k::max_input), x));
  const __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(k::log2e)),
                                   _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(k::ln2_hi), x);  // exact
  r = _mm256_fnmadd_ps(n, _mm256_set1_ps(k::ln2_lo), r);
  __m256 q = _mm256_set1_ps(k::c6);
  q = _mm256_fmadd_ps(q, r, _mm256_set1_ps(k::c5));
  q = _mm256_fmadd_ps(q, r, _mm256_set1_ps(k::c4));
  q = _mm256_fmadd_ps(q, r, _mm256_set1_ps(k::c3));
  q = _mm256_fmadd_ps(q, r, _mm256_set1_ps(k::c2));
  const __m256 p = _mm256_add_ps(_mm256_set1_ps(1.0f), _mm256_fmadd_ps(_mm256_mul_ps(r, r), q, r));
  const __m256i n_int = _mm256_cvtps_epi32(n);
  if (all_normal)
    return _mm256_castsi256_ps(
        _mm256_add_epi32(_mm256_castps_si256(p), _mm256_slli_epi32(n_int, 23)));
  // 2^m as a float has the bits (m + 127) << 23. n is in [-150, 129], so both halves are
  // in [-75, 65]. (For NaN, n converts to INT_MIN and the scale is garbage, times NaN.)
  const __m256i half = _mm256_srai_epi32(n_int, 1);
  const __m256i bias = _mm256_set1_epi32(127);
  const __m256 scale_1 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(half, bias), 23));
  const __m256 scale_2 = _mm256_castsi256_ps(
      _mm256_slli_epi32(_mm256_add_epi32(_mm256_sub_epi32(n_int, half), bias), 23));
  return _mm256_mul_ps(_mm256_mul_ps(p, scale_1), scale_2);
}

NORMGRAD_AVX2_FMA inline __m256 sigmoid8(__m256 x) {
  // As sigmoid_value: 1 / (1 + e^-x), or e^x below -(128 - 1) ln 2; one exp either way.
  const __m256 tiny = _mm256_cmp_ps(x, _mm256_set1_ps(sigmoid_exp_limit), _CMP_LT_OQ);
  const __m256 negated = _mm256_xor_ps(x, _mm256_set1_ps(-0.0f));
  const __m256 e = exp8(_mm256_blendv_ps(negated, x, tiny));
  const __m256 one = _mm256_set1_ps(1.0f);
  return _mm256_blendv_ps(_mm256_div_ps(one, _mm256_add_ps(one, e)), e, tiny);
}

NORMGRAD_AVX2_FMA inline __m256 tanh8(__m256 x) {
  const __m256 sign_mask = _mm256_set1_ps(-0.0f);
  const __m256 one = _mm256_set1_ps(1.0f);
  const __m256 a = _mm256_andnot_ps(sign_mask, x);
  // Large |x|: 1 - 2 / (e^{2a} + 1); e^{2a} = inf gives exactly 1.
  const __m256 e = exp8(_mm256_add_ps(a, a));
  const __m256 large =
      _mm256_sub_ps(one, _mm256_div_ps(_mm256_set1_ps(2.0f), _mm256_add_ps(e, one)));
  // Small |x|: a + a (a^2 P(a^2)), the last step one fused rounding.
  const __m256 z = _mm256_mul_ps(a, a);
  __m256 q = _mm256_set1_ps(tanh_t4);
  q = _mm256_fmadd_ps(q, z, _mm256_set1_ps(tanh_t3));
  q = _mm256_fmadd_ps(q, z, _mm256_set1_ps(tanh_t2));
  q = _mm256_fmadd_ps(q, z, _mm256_set1_ps(tanh_t1));
  q = _mm256_fmadd_ps(q, z, _mm256_set1_ps(tanh_t0));
  const __m256 small = _mm256_fmadd_ps(a, _mm256_mul_ps(z, q), a);
  // NaN compares false, so it takes the large form, which keeps it NaN.
  const __m256 use_small = _mm256_cmp_ps(a, _mm256_set1_ps(tanh_polynomial_limit), _CMP_LT_OQ);
  const __m256 magnitude = _mm256_blendv_ps(large, small, use_small);
  return _mm256_or_ps(magnitude, _mm256_and_ps(x, sign_mask));
}

// Loads the last count < 8 elements into a zero-padded vector (a partial load could touch
// memory past the row), so they go through the same arithmetic as the rest.
NORMGRAD_AVX2_FMA inline __m256 load_partial(const float* in, std::int64_t count) {
  alignas(32) float buffer[8] = {};
  std::memcpy(buffer, in, static_cast<std::size_t>(count) * sizeof(float));
  return _mm256_load_ps(buffer);
}

NORMGRAD_AVX2_FMA inline void store_partial(float* out, __m256 values, std::int64_t count) {
  alignas(32) float buffer[8];
  _mm256_store_ps(buffer, values);
  std::memcpy(out, buffer, static_cast<std::size_t>(count) * sizeof(float));
}

template <__m256 (*function)(__m256)>
NORMGRAD_AVX2_FMA void map_row_avx2(float* out, const float* in, std::int64_t count) {
  std::int64_t i = 0;
  for (; i + 8 <= count; i += 8) _mm256_storeu_ps(out + i, function(_mm256_loadu_ps(in + i)));
  if (i < count) store_partial(out + i, function(load_partial(in + i, count - i)), count - i);
}

// The maximum is exact, so lanes may be combined in any order; NaN is tracked on the side because
// vmaxps returns its second operand, not NaN, when only the first is NaN.
NORMGRAD_AVX2_FMA float max_row_avx2(const float* in, std::int64_t count) {
  float result = in[0];
  std::int64_t i = 0;
  if (count >= 32) {
    __m256 max_0 = _mm256_loadu_ps(in), max_1 = max_0, max_2 = max_0, max_3 = max_0;
    __m256 nan_0 = _mm256_setzero_ps(), nan_1 = nan_0;
    for (; i + 32 <= count; i += 32) {
      const __m256 a = _mm256_loadu_ps(in + i), b = _mm256_loadu_ps(in + i + 8);
      const __m256 c = _mm256_loadu_ps(in + i + 16), d = _mm256_loadu_ps(in + i + 24);
      max_0 = _mm256_max_ps(max_0, a);
      max_1 = _mm256_max_ps(max_1, b);
      max_2 = _mm256_max_ps(max_2, c);
      max_3 = _mm256_max_ps(max_3, d);
      nan_0 = _mm256_or_ps(nan_0, _mm256_cmp_ps(a, b, _CMP_UNORD_Q));
      nan_1 = _mm256_or_ps(nan_1, _mm256_cmp_ps(c, d, _CMP_UNORD_Q));
    }
    if (_mm256_movemask_ps(_mm256_or_ps(nan_0, nan_1)) != 0)
      return std::numeric_limits<float>::quiet_NaN();
    alignas(32) float lanes[8];
    _mm256_store_ps(lanes, _mm256_max_ps(_mm256_max_ps(max_0, max_1), _mm256_max_ps(max_2, max_3)));
    for (float lane : lanes) result = maximum_value(result, lane);
  }
  for (; i < count; ++i) result = maximum_value(result, in[i]);
  return result;
}

// The 8 float lanes widened to double and added into two 4-lane sums.
NORMGRAD_AVX2_FMA inline void accumulate(__m256d& sum_low, __m256d& sum_high, __m256 values) {
  sum_low = _mm256_add_pd(sum_low, _mm256_cvtps_pd(_mm256_castps256_ps128(values)));
  sum_high = _mm256_add_pd(sum_high, _mm256_cvtps_pd(_mm256_extractf128_ps(values, 1)));
}

NORMGRAD_AVX2_FMA double exp_shifted_sum_row_avx2(float* out, const float* in, std::int64_t count,
                                                  float shift) {
  const __m256 shift_vector = _mm256_set1_ps(shift);
  __m256d sum_low = _mm256_setzero_pd(), sum_high = _mm256_setzero_pd();
  std::int64_t i = 0;
  for (; i + 8 <= count; i += 8) {
    const __m256 values = exp8(_mm256_sub_ps(_mm256_loadu_ps(in + i), shift_vector));
    if (out) _mm256_storeu_ps(out + i, values);
    accumulate(sum_low, sum_high, values);
  }
  if (i < count) {
    const std::int64_t rest = count - i;
    __m256 values = exp8(_mm256_sub_ps(load_partial(in + i, rest), shift_vector));
    if (out) store_partial(out + i, values, rest);
    // Drop the padding lanes: lane j is kept when j < rest.
    const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    const __m256i keep = _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(rest)), lane);
    values = _mm256_and_ps(values, _mm256_castsi256_ps(keep));
    accumulate(sum_low, sum_high, values);
  }
  alignas(32) double lanes[4];
  _mm256_store_pd(lanes, _mm256_add_pd(sum_low, sum_high));
  return (lanes[0] + lanes[1]) + (lanes[2] + lanes[3]);
}

#endif  // __x86_64__

// The one dispatch point: a table of row functions per path.
struct RowKernels {
  void (*exp)(float*, const float*, std::int64_t);
  void (*sigmoid)(float*, const float*, std::int64_t);
  void (*tanh)(float*, const float*, std::int64_t);
  float (*max)(const float*, std::int64_t);
  double (*exp_shifted_sum)(float*, const float*, std::int64_t, float);
};

constexpr RowKernels portable_kernels{exp_row_portable, sigmoid_row_portable, tanh_row_portable,
                                      max_row_portable, exp_shifted_sum_row_portable};
#if defined(__x86_64__)
constexpr RowKernels avx2_kernels{map_row_avx2<exp8>, map_row_avx2<sigmoid8>, map_row_avx2<tanh8>,
                                  max_row_avx2, exp_shifted_sum_row_avx2};
#endif

const RowKernels& kernels_for([[maybe_unused]] VectorPath path) {
#if defined(__x86_64__)
  if (path == VectorPath::Avx2Fma && avx2_exp_available()) return avx2_kernels;
#endif
  return portable_kernels;
}

}  // namespace

bool avx2_exp_available() {
#if defined(__x86_64__)
  static const bool available = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  }();
  return available;
#else
  return false;
#endif
}

VectorPath default_vector_path() {
  return avx2_exp_available() ? VectorPath::Avx2Fma : VectorPath::Portable;
}

void exp_row(float* out, const float* in, std::int64_t count, VectorPath path) {
  kernels_for(path).exp(out, in, count);
}

void sigmoid_row(float* out, const float* in, std::int64_t count, VectorPath path) {
  kernels_for(path).sigmoid(out, in, count);
}

void tanh_row(float* out, const float* in, std::int64_t count, VectorPath path) {
  kernels_for(path).tanh(out, in, count);
}

float max_row(const float* in, std::int64_t count, VectorPath path) {
  return kernels_for(path).max(in, count);
}

double exp_shifted_sum_row(float* out, const float* in, std::int64_t count, float shift,
                           VectorPath path) {
  return kernels_for(path).exp_shifted_sum(out, in, count, shift);
}

}  // namespace normgrad::backend::cpu
