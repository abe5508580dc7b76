#pragma once
// Philox 4x32-10, the counter-based random number generator of Salmon et al., "Parallel Random
// Numbers: As Easy as 1, 2, 3" (SC 2011), and the conversions from its 32-bit words to the
// distributions that Backend::random offers.
//
// A counter-based generator is a pure function (key, counter) -> four random words, so
// element i of a random tensor can be computed from (seed, offset + i) alone, by any thread on
// any device, in any order. Header-only and free of library calls other than <cmath>, so the
// CUDA backend can include it unchanged (NORMGRAD_HOST_DEVICE marks the functions for nvcc).

#include <cmath>
#include <cstdint>

#include "backends/host_device.h"
#include "base/bfloat16.h"

namespace normgrad::philox {

struct Words {
  std::uint32_t w[4];
};

// The round multipliers and the Weyl-sequence key increments (golden ratio and sqrt(3) - 1).
inline constexpr std::uint32_t round_multiplier_0 = 0xD2511F53u;
inline constexpr std::uint32_t round_multiplier_1 = 0xCD9E8D57u;
inline constexpr std::uint32_t key_increment_0 = 0x9E3779B9u;
inline constexpr std::uint32_t key_increment_1 = 0xBB67AE85u;

// One round: two 32x32 -> 64-bit products, whose halves are mixed with the other two words
// and the key:  (c0, c1, c2, c3) -> (hi(M1 c2) ^ c1 ^ k0, lo(M1 c2), hi(M0 c0) ^ c3 ^ k1, lo(M0
// c0)).
NORMGRAD_HOST_DEVICE constexpr Words philox_round(Words c, std::uint32_t key0, std::uint32_t key1) {
  const std::uint64_t product0 = std::uint64_t{round_multiplier_0} * c.w[0];
  const std::uint64_t product1 = std::uint64_t{round_multiplier_1} * c.w[2];
  Words next{};
  next.w[0] = static_cast<std::uint32_t>(product1 >> 32) ^ c.w[1] ^ key0;
  next.w[1] = static_cast<std::uint32_t>(product1);
  next.w[2] = static_cast<std::uint32_t>(product0 >> 32) ^ c.w[3] ^ key1;
  next.w[3] = static_cast<std::uint32_t>(product0);
  return next;
}

// Ten rounds; the key advances by the Weyl increments between rounds.
NORMGRAD_HOST_DEVICE constexpr Words philox4x32_10(Words counter, std::uint32_t key0,
                                                   std::uint32_t key1) {
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {
      key0 += key_increment_0;
      key1 += key_increment_1;
    }
    counter = philox_round(counter, key0, key1);
  }
  return counter;
}

// The four words for element `index` of a stream: key = the seed's two 32-bit halves,
// counter = (low, high) halves of the 64-bit element counter, then two zero words.
NORMGRAD_HOST_DEVICE constexpr Words random_words(std::uint64_t seed, std::uint64_t index) {
  const Words counter{
      {static_cast<std::uint32_t>(index), static_cast<std::uint32_t>(index >> 32), 0u, 0u}};
  return philox4x32_10(counter, static_cast<std::uint32_t>(seed),
                       static_cast<std::uint32_t>(seed >> 32));
}

// Uniform on [0, 1) with the 24 bits a float32 mantissa holds: (w >> 8) * 2^-24.
NORMGRAD_HOST_DEVICE constexpr float uniform_float(std::uint32_t word) {
  return static_cast<float>(word >> 8) * (1.0f / 16777216.0f);
}

// Uniform on [0, 1) with 53 bits from two words: (((high << 32) | low) >> 11) * 2^-53.
NORMGRAD_HOST_DEVICE constexpr double uniform_double(std::uint32_t high, std::uint32_t low) {
  const std::uint64_t bits = (std::uint64_t{high} << 32) | low;
  return static_cast<double>(bits >> 11) * (1.0 / 9007199254740992.0);
}

// Box-Muller: for u1, u2 uniform on [0, 1), sqrt(-2 ln(1 - u1)) cos(2 pi u2) is standard
// normal; 1 - u1 lies in (0, 1], so the logarithm is finite.
NORMGRAD_HOST_DEVICE inline double box_muller(double u1, double u2) {
  constexpr double two_pi = 6.283185307179586476925286766559;
  return std::sqrt(-2.0 * std::log(1.0 - u1)) * std::cos(two_pi * u2);
}

// A uniform draw on [low, high) stored as bfloat16: `value`, the float32 draw (already below
// float32's high), rounded once. Rounding carries the draws just below high onto bfloat16's
// high (on [0, 1), 411 of 200,000 draws came out as 1 before this was checked); those take
// the bfloat16 below high instead, as the float32 draws do below float32's high.
NORMGRAD_HOST_DEVICE inline bfloat16 uniform_bfloat16(float value, double low, double high) {
  bfloat16 rounded(value);
  const bfloat16 top(high);
  if (high > low && !(static_cast<float>(rounded) < static_cast<float>(top)))
    rounded = next_toward(top, bfloat16(low));
  return rounded;
}

// 64 random bits from the first two words.
NORMGRAD_HOST_DEVICE constexpr std::uint64_t random_bits64(const Words& words) {
  return (std::uint64_t{words.w[0]} << 32) | words.w[1];
}

}  // namespace normgrad::philox
