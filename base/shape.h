#pragma once
// Shapes and strides, and the arithmetic on them that every op needs: element counts,
// contiguous strides, dimension wrapping and NumPy broadcasting.

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

namespace normgrad {

using Shape = std::vector<std::int64_t>;    // sizes, outermost first
using Strides = std::vector<std::int64_t>;  // in elements, not bytes

// The element count. Checked: a negative size, or a product that does not fit in int64, throws
// "numel: ..." naming the shape (see base/checked.h), so no count ever wraps around.
std::int64_t numel(const Shape& shape);

// Row-major strides: the last dimension moves fastest. Checked like numel.
Strides contiguous_strides(const Shape& shape);

// Maps a possibly negative dim into [0, rank); throws "op: dim d out of range for rank r".
int wrap_dim(std::int64_t dim, std::int64_t rank, const char* op);

// NumPy broadcasting: dimensions are aligned from the right; sizes must match or be 1.
// Throws "op: shapes [a] and [b] cannot be broadcast".
Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op);

std::string to_string(const Shape& shape);  // "[2, 3]"

}  // namespace normgrad

namespace std {
// Lets NG_CHECK messages and doctest print shapes directly.
inline ostream& operator<<(ostream& out, const vector<int64_t>& shape) {
  return out << normgrad::to_string(shape);
}
}  // namespace std
