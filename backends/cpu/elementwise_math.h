#pragma once
// Scalar helpers shared by the elementwise kernels: wrapping int64 arithmetic (signed overflow
// is undefined behaviour in C++, two's-complement wrap-around is what users of int64 tensors
// expect), NaN-propagating maximum/minimum, leaky ReLU's slope, a sigmoid that cannot
// overflow, and the GELU derivative.

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

namespace normgrad::backend::cpu {

template <typename T> inline T add_values(T a, T b) {
  if constexpr (std::is_integral_v<T>)
    return static_cast<T>(static_cast<std::uint64_t>(a) + static_cast<std::uint64_t>(b));
  else
    return a + b;
}

template <typename T> inline T subtract_values(T a, T b) {
  if constexpr (std::is_integral_v<T>)
    return static_cast<T>(static_cast<std::uint64_t>(a) - static_cast<std::uint64_t>(b));
  else
    return a - b;
}

template <typename T> inline T multiply_values(T a, T b) {
  if constexpr (std::is_integral_v<T>)
    return static_cast<T>(static_cast<std::uint64_t>(a) * static_cast<std::uint64_t>(b));
  else
    return a * b;
}

template <typename T> inline T negate_value(T x) {
  if constexpr (std::is_integral_v<T>)
    return static_cast<T>(std::uint64_t{0} - static_cast<std::uint64_t>(x));
  else
    return -x;  // -(+0) = -0, unlike 0 - x
}

template <typename T> inline T absolute_value(T x) {
  if constexpr (std::is_integral_v<T>)
    return x < 0 ? negate_value(x) : x;
  else
    return std::abs(x);  // |-0| = +0
}

// max(a, b), NaN when either is NaN (x != x only for NaN). The bitwise | (not ||) keeps the
// selection free of branches, so loops over it vectorise into compare-and-blend.
template <typename T> inline T maximum_value(T a, T b) { return ((a > b) | (a != a)) ? a : b; }
template <typename T> inline T minimum_value(T a, T b) { return ((a < b) | (a != a)) ? a : b; }

// Leaky ReLU's slope at x: 1 where x > 0, alpha elsewhere (NaN included), picked with a bit
// mask; y = x slope and dx = dy slope are then one unconditional product. Written as
// "x > 0 ? dy : alpha * dy" the product is conditional, and the compiler, which may not
// speculate a floating-point operation that could trap, leaves the loop scalar with a branch
// that random signs mispredict half the time (1.4 GB/s on a training step's activations).
template <typename T> inline T leaky_relu_slope(T x, T alpha) {
  using Bits = std::conditional_t<sizeof(T) == 4, std::uint32_t, std::uint64_t>;
  const Bits positive = Bits{0} - static_cast<Bits>(x > T{0});  // all ones or all zeros
  return std::bit_cast<T>((positive & std::bit_cast<Bits>(T{1})) |
                          (~positive & std::bit_cast<Bits>(alpha)));
}

// sigmoid(x) = 1 / (1 + e^-x). Below x = -(max_exponent - 1) ln 2 (-88.03 in float, -708.4 in
// double) e^-x could overflow and give 1 / inf = 0 where the true value is a tiny positive
// number; there 1 + e^x rounds to 1, so sigmoid(x) = e^x / (1 + e^x) = e^x, which underflows
// gradually. Elsewhere the plain form is monotone (each step is monotone in x, and so is
// rounding), which e^x / (1 + e^x) written for all x < 0 is not.
template <typename T> inline T sigmoid_value(T x) {
  constexpr T exp_limit = -static_cast<T>(std::numeric_limits<T>::max_exponent - 1) *
                          static_cast<T>(0.6931471805599453);
  if (x < exp_limit) return std::exp(x);
  return T{1} / (T{1} + std::exp(-x));
}

// gelu(x) = x Phi(x) = 0.5 x erfc(-x / sqrt 2). The textbook 0.5 x (1 + erf(x / sqrt 2)) is
// the same function, but 1 + erf cancels to 0 for x below about -6 (float64), where erfc
// keeps the tiny true value.
template <typename T> inline T gelu_value(T x) {
  constexpr T inverse_sqrt2 = static_cast<T>(0.70710678118654752440);
  return static_cast<T>(0.5) * x * std::erfc(-x * inverse_sqrt2);
}

// gelu'(x) = Phi(x) + x phi(x), with phi(x) = exp(-x^2 / 2) / sqrt(2 pi).
template <typename T> inline T gelu_derivative(T x) {
  constexpr T inverse_sqrt2 = static_cast<T>(0.70710678118654752440);
  constexpr T inverse_sqrt_2pi = static_cast<T>(0.39894228040143267794);
  const T cdf = static_cast<T>(0.5) * std::erfc(-x * inverse_sqrt2);
  return cdf + x * inverse_sqrt_2pi * std::exp(static_cast<T>(-0.5) * x * x);
}

}  // namespace normgrad::backend::cpu
