#pragma once
// Checked size arithmetic: every path that turns sizes from a user or a file into an element
// count or a byte count goes through these, so that a product that would wrap around, or a
// size no machine could hold, is refused with an Error naming the shape instead of becoming a
// small allocation that later code writes past.
//
//   std::int64_t n = checked_numel(shape, "reshape");            // throws on overflow
//   std::size_t bytes = checked_nbytes(shape, 4, "load");        // and above max_tensor_bytes

#include <cstddef>
#include <cstdint>
#include <limits>

#include "base/shape.h"

namespace normgrad {

// The largest tensor normgrad allocates: 2^48 bytes (256 TiB), the span of the 48-bit virtual
// addresses of today's x86-64 and ARM64 processors, so no real tensor is refused, while a count
// near the int64 limit is caught before any pointer arithmetic on it can wrap.
inline constexpr std::uint64_t max_tensor_bytes = std::uint64_t{1} << 48;

// a * b and a + b, or false when the exact result does not fit in int64.
inline bool multiply_fits(std::int64_t a, std::int64_t b, std::int64_t& product) {
  return !__builtin_mul_overflow(a, b, &product);
}
inline bool add_fits(std::int64_t a, std::int64_t b, std::int64_t& sum) {
  return !__builtin_add_overflow(a, b, &sum);
}

// The product of the sizes; throws "op: shape [..] has more elements than int64 can count"
// when it overflows, and "op: sizes must be non-negative" for a negative size.
std::int64_t checked_numel(const Shape& shape, const char* op);

// numel × element_size in bytes; throws when either overflows or the total is above
// max_tensor_bytes, naming the shape and the byte count asked for.
std::size_t checked_nbytes(const Shape& shape, std::size_t element_size, const char* op);

}  // namespace normgrad
