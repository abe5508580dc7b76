#pragma once
// bfloat16 in the CPU kernels. A kernel is templated on the type S it stores and computes in
// T = compute_t<S> (backends/compute_type.h), so that for bfloat16 it gives, bit for bit, what
// its float32 instantiation gives on the same values, rounded once. The tensors are read and
// written as bfloat16, 2 bytes a value, with no float32 copies of them; what a kernel needs in
// float32 lies in a buffer of its own, a row or a piece of rows (only a very long row outgrows
// the cache). For float32 and float64 everything below hands values through untouched.
//
// Elementwise kernels wrap their function (on_stored): each value is widened as it is loaded
// and the result rounded as it is stored (store_value).
//
// Kernels that work a row at a time (the norms, softmax's forward) widen each row they read
// into a float32 buffer of their own, run their float32 loops on it, and round each output row
// back once:
//
//   const T* x = row_values(x_row, n, buffer);      // widened into buffer, or x_row itself
//   T* y = output_row(y_row, buffer + n);           // buffer + n, or y_row itself
//   ... the float32 loops read x and write y ...
//   store_row(y_row, y, n);                         // rounds into y_row, or nothing to do

#include <bit>
#include <cstdint>
#include <type_traits>

#include "backends/compute_type.h"

namespace normgrad::backend::cpu {

// Whether a kernel storing S widens it: true for bfloat16 alone.
template <typename S> constexpr bool widens = !std::is_same_v<S, compute_t<S>>;

// The conversions of a unit-stride row, out of line (bfloat16_rows.cpp) and compiled for AVX2
// and baseline x86-64 as the row kernels are (row_kernel.h): baseline SSE2 has no instruction
// that packs 32-bit lanes into unsigned 16-bit ones, so rounding stays scalar there.
void widen_row(const bfloat16* in, std::int64_t n, float* out);
// Rounds to nearest, ties to even, as bfloat16's conversion does (bfloat16::round_bits).
void round_row(const float* in, std::int64_t n, bfloat16* out);

// `rows` rows of `width` values, their starts `stride` values apart, widened into a dense
// [rows, width] buffer; and back, rounded.
inline void widen_rows(const bfloat16* in, std::int64_t rows, std::int64_t width,
                       std::int64_t stride, float* out) {
  if (width == stride) return widen_row(in, rows * width, out);
  for (std::int64_t r = 0; r < rows; ++r) widen_row(in + r * stride, width, out + r * width);
}

inline void round_rows(const float* in, std::int64_t rows, std::int64_t width, bfloat16* out,
                       std::int64_t stride) {
  if (width == stride) return round_row(in, rows * width, out);
  for (std::int64_t r = 0; r < rows; ++r) round_row(in + r * width, width, out + r * stride);
}

// The n values of `row` in the compute type: `row` itself, or widened into `buffer`.
template <typename S>
const compute_t<S>* row_values(const S* row, std::int64_t n, compute_t<S>* buffer) {
  if constexpr (widens<S>) {
    widen_row(row, n, buffer);
    return buffer;
  } else {
    return row;
  }
}

// Where a kernel writes an output row in the compute type: `row` itself, or `buffer`, which
// store_row then rounds into `row`.
template <typename S> compute_t<S>* output_row(S* row, compute_t<S>* buffer) {
  if constexpr (widens<S>)
    return buffer;
  else
    return row;
}

template <typename S> void store_row(S* row, const compute_t<S>* values, std::int64_t n) {
  if constexpr (widens<S>) round_row(values, n, row);
}

// out[index] = value as S. A compute-type value for a bfloat16 out is rounded through its bits:
// GCC vectorises a loop of such stores, where it leaves a loop that stores the struct scalar.
// Any other value is converted as an assignment would; a bfloat16 one is stored as it is, bits
// and all (a copy must not quieten a signalling NaN).
template <typename S, typename Value>
inline void store_value(S* out, std::int64_t index, Value value) {
  if constexpr (widens<S> && std::is_same_v<Value, compute_t<S>>)
    reinterpret_cast<std::uint16_t*>(out)[index] =
        bfloat16::round_bits(std::bit_cast<std::uint32_t>(value));
  else
    out[index] = static_cast<S>(value);
}

// An elementwise function of compute-type values as a function of stored values: for bfloat16
// it widens each argument as it is loaded; its result, in the compute type, is rounded once
// where the row kernel stores it (store_value, in strided_loop.h's rows). For the other types
// it is the function itself.
//
//   unary_row<S, S>(..., on_stored<S>([](float x) { return x * x; }));
template <typename S, typename Function> auto on_stored(Function function) {
  if constexpr (widens<S>)
    return [function](auto... values) { return function(static_cast<compute_t<S>>(values)...); };
  else
    return function;
}

}  // namespace normgrad::backend::cpu
