#pragma once
// float32 exp, sigmoid and tanh over unit-stride rows, and the max and exp-and-sum steps of
// softmax, with the implementation picked once at run time: an AVX2+FMA kernel
// (vector_exp.cpp) on x86-64 CPUs that have both, otherwise the C library's functions one
// element at a time. The library itself is compiled for baseline x86-64, where a hand-written
// SSE2 exp gains too little over expf to be worth a second kernel.
//
// exp(x), as the kernel computes it (exp_float_model below is the same arithmetic in scalar
// C++, and the tests hold the two bit-identical):
//   1. n = round(x log2(e)),  r = x - n ln2.  ln2 = ln2_hi + ln2_lo (Cody–Waite): ln2_hi has
//      16 significant bits, so n ln2_hi is exact for |n| <= 255 and so is x - n ln2_hi (the two
//      are close); r's only rounding is the last step, r -= n ln2_lo. |r| <= ln2/2, slightly
//      more where x log2(e) rounds across a half, which the fit below covers.
//   2. e^r ~ 1 + r + c2 r^2 + ... + c6 r^6: a near-minimax fit (Lawson's reweighted least
//      squares) of relative error 3.4e-9 on |r| <= 0.35, about 0.05 ulp; the coefficients were
//      rounded to float one at a time, the later ones refitted after each rounding. It is
//      evaluated as 1 + (r + r^2 q(r)), q = c2 + c3 r + ... by Horner: r + r^2 q then increases
//      with r even after rounding (r^2 q moves by less than half as much as r), which keeps the
//      result monotone where consecutive inputs differ by less than an ulp of the output.
//   3. e^x = e^r 2^n, with 2^n applied as 2^floor(n/2) 2^(n - floor(n/2)), two normal floats:
//      the first product is exact and the second rounds once, so results past FLT_MAX become
//      +inf and results below FLT_MIN underflow gradually (denormals), correctly rounded up to
//      the polynomial's error. Where all 8 lanes have |x| <= 86 every result is normal, and
//      adding n to p's exponent bits gives the same result more cheaply.
//   x is first clamped to [-104, 89]: exp(-104) < 2^-150 rounds to +0, exp(89) overflows to
//   +inf, and NaN passes through the clamp and comes out NaN.
//
// sigmoid(x) = 1 / (1 + e^-x), and e^x where e^-x could overflow (x < -88.03, where 1 + e^x
// rounds to 1): see sigmoid_value in elementwise_math.h, which the portable path uses.
//
// tanh(x) = sign(x) tanh|x|, with tanh|x| = 1 - 2 / (e^{2|x|} + 1) for |x| >= 0.625, where
// tanh|x| > 0.55 so the subtraction costs at most about one bit; below, where it would cost
// more, tanh a = a + a^3 P(a^2), P of degree 4 fitted like exp's (relative error 4.5e-9).
//
// Measured over every float32 input against the function in double (ulps of the float
// result; denormal results in denormal ulps), all three monotone:
//   exp      1.02 ulp at most; within 1 ulp of the correctly rounded result, equal to it for
//            99.6% of inputs (glibc's expf: 0.502 ulp);
//   sigmoid  2.49 ulp at most, within 2 ulp of the correctly rounded result (the same bound
//            as 1 / (1 + expf(-x)) with glibc's expf: the additions and division dominate);
//   tanh     1.34 ulp at most, within 1 ulp of the correctly rounded result.
//
// Rows are processed 8 elements at a time and the last count % 8 through a zero-padded copy of
// one vector, so an element's result never depends on where it sits in a row, nor on how rows
// are split between threads.

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace normgrad::backend::cpu {

enum class VectorPath : std::uint8_t {
  Portable,  // std::exp / std::tanh one element at a time (any CPU)
  Avx2Fma,   // the kernels of vector_exp.cpp (x86-64 CPUs with AVX2 and FMA)
};

// True on x86-64 CPUs (and operating systems) that support AVX2 and FMA; checked once.
bool avx2_exp_available();
// Avx2Fma where available, else Portable.
VectorPath default_vector_path();

// out[i] = f(in[i]) for i < count; out may equal in. Asking for Avx2Fma where it is not
// available runs the portable path.
void exp_row(float* out, const float* in, std::int64_t count,
             VectorPath path = default_vector_path());
void sigmoid_row(float* out, const float* in, std::int64_t count,
                 VectorPath path = default_vector_path());
void tanh_row(float* out, const float* in, std::int64_t count,
              VectorPath path = default_vector_path());

// The softmax steps. max_row: the largest of in[0..count), NaN if any is NaN (count >= 1).
float max_row(const float* in, std::int64_t count, VectorPath path = default_vector_path());
// exp_shifted_sum_row: out[i] = exp(in[i] - shift), returning their sum in double, added in an
// order fixed by count alone; out may be null where only the sum is wanted.
double exp_shifted_sum_row(float* out, const float* in, std::int64_t count, float shift,
                           VectorPath path = default_vector_path());

// The constants of exp, shared by the kernel and the scalar model.
namespace exp_constants {
inline constexpr float min_input = -104.0f;  // exp(-104) < 2^-150: rounds to 0
inline constexpr float max_input = 89.0f;    // exp(89) > FLT_MAX: overflows to inf
inline constexpr float log2e = 1.44269502f;
inline constexpr float ln2_hi = 0.693145751953125f;  // 45426 / 2^16
inline constexpr float ln2_lo = 1.42860677e-06f;     // ln2 - ln2_hi, rounded
inline constexpr float c2 = 0.49999994f;
inline constexpr float c3 = 0.166665167f;
inline constexpr float c4 = 0.0416682847f;
inline constexpr float c5 = 0.00836925115f;
inline constexpr float c6 = 0.00138204673f;
}  // namespace exp_constants

// The kernel's exp of one float in scalar C++: the oracle for the kernel and the statement of
// its math. (std::ldexp rounds p 2^n once, as the kernel's two multiplications do.)
inline float exp_float_model(float x) {
  namespace k = exp_constants;
  if (std::isnan(x)) return x;
  x = std::clamp(x, k::min_input, k::max_input);
  const float n = std::nearbyint(x * k::log2e);
  const float r = std::fma(-n, k::ln2_lo, x - n * k::ln2_hi);
  float q = k::c6;
  q = std::fma(q, r, k::c5);
  q = std::fma(q, r, k::c4);
  q = std::fma(q, r, k::c3);
  q = std::fma(q, r, k::c2);
  const float p = 1.0f + std::fma(r * r, q, r);
  return std::ldexp(p, static_cast<int>(n));
}

}  // namespace normgrad::backend::cpu
