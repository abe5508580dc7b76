#pragma once
// bfloat16: the upper half of a float32 — its sign, its 8-bit exponent and the top 7 of its 23
// mantissa bits. It has float32's range (to about 3.4e38) with 8 significant bits: rounding
// moves a value by at most 2^-8 of itself, and every bfloat16 is exactly a float32.
//
// normgrad stores bfloat16 and computes in float32: a kernel widens each value to float, works,
// and rounds its result back once. Conversions round to nearest, ties to even; NaN stays NaN
// (quiet), infinities stay infinite, and a finite value too large for bfloat16 becomes infinity,
// as IEEE rounding asks. From double or int64 the value goes through float first.
//
// Host and device code share this header; the bits are those of CUDA's __nv_bfloat16, so a
// buffer of either type is a buffer of the other.

#include <cstdint>
#include <cstring>
#include <type_traits>

#if defined(__CUDACC__)
#define NG_BFLOAT16_HD __host__ __device__
#else
#define NG_BFLOAT16_HD
#endif

namespace normgrad {

struct bfloat16 {
  std::uint16_t bits = 0;

  constexpr bfloat16() = default;
  template <typename T>
  requires std::is_arithmetic_v<T> NG_BFLOAT16_HD explicit bfloat16(T value)
      : bits(round(static_cast<float>(value))) {}

  NG_BFLOAT16_HD operator float() const {
    const std::uint32_t wide = static_cast<std::uint32_t>(bits) << 16;
#if defined(__CUDA_ARCH__)
    return __uint_as_float(wide);
#else
    float value;
    std::memcpy(&value, &wide, sizeof value);
    return value;
#endif
  }

  static constexpr bfloat16 from_bits(std::uint16_t raw) {
    bfloat16 value;
    value.bits = raw;
    return value;
  }

  // float32 -> the nearest bfloat16's bits. Adding 0x7fff plus the lowest kept bit to the 32 bits
  // and dropping the low half rounds to nearest with ties to even; a carry out of the mantissa
  // moves up the exponent, and from the largest finite values into infinity.
  NG_BFLOAT16_HD static std::uint16_t round(float value) {
#if defined(__CUDA_ARCH__)
    return round_bits(__float_as_uint(value));
#else
    std::uint32_t wide;
    std::memcpy(&wide, &value, sizeof wide);
    return round_bits(wide);
#endif
  }

  // The same from a float32's bits. NaN keeps its sign and the top of its payload, made quiet.
  // Both results are computed and one selected, without a branch, so that a loop of conversions
  // vectorises.
  NG_BFLOAT16_HD static constexpr std::uint16_t round_bits(std::uint32_t wide) {
    const std::uint32_t nearest = (wide + 0x7fffu + ((wide >> 16) & 1u)) >> 16;
    const std::uint32_t quiet_nan = (wide >> 16) | 0x0040u;
    return static_cast<std::uint16_t>((wide & 0x7fffffffu) > 0x7f800000u ? quiet_nan : nearest);
  }
};

static_assert(sizeof(bfloat16) == 2 && alignof(bfloat16) == 2);

// The bfloat16 next to `from` in the direction of `to`, as std::nextafter is for float: `to`
// itself when the two are equal, NaN when either is NaN. Steps run over the sign and magnitude
// bits: away from zero adds one to them, towards zero takes one away; from zero, the smallest
// subnormal of `to`'s sign.
NG_BFLOAT16_HD inline bfloat16 next_toward(bfloat16 from, bfloat16 to) {
  const float a = from, b = to;
  if (a != a || b != b) return bfloat16::from_bits(0x7fc0);
  if (a == b) return to;
  if ((from.bits & 0x7fffu) == 0) return bfloat16::from_bits(b > 0 ? 0x0001 : 0x8001);
  const bool away_from_zero = (a < b) == (a > 0);
  return bfloat16::from_bits(
      static_cast<std::uint16_t>(away_from_zero ? from.bits + 1u : from.bits - 1u));
}

}  // namespace normgrad
