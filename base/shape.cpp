#include "base/shape.h"

#include <algorithm>

#include "base/checked.h"
#include "base/error.h"

namespace normgrad {

std::int64_t numel(const Shape& shape) { return checked_numel(shape, "numel"); }

Strides contiguous_strides(const Shape& shape) {
  checked_numel(shape, "contiguous_strides");  // then no product below can wrap
  Strides strides(shape.size());
  std::int64_t stride = 1;
  for (std::size_t i = shape.size(); i-- > 0;) {
    strides[i] = stride;
    stride *= std::max<std::int64_t>(shape[i], 1);
  }
  return strides;
}

int wrap_dim(std::int64_t dim, std::int64_t rank, const char* op) {
  const std::int64_t lo = rank == 0 ? -1 : -rank;
  const std::int64_t hi = rank == 0 ? 0 : rank - 1;
  NG_CHECK(dim >= lo && dim <= hi, op, "dim ", dim, " is out of range for a tensor of rank ", rank,
           " (expected a dim in [", lo, ", ", hi, "])");
  return static_cast<int>(dim < 0 ? dim + std::max<std::int64_t>(rank, 1) : dim);
}

Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op) {
  const std::size_t rank = std::max(a.size(), b.size());
  Shape out(rank);
  for (std::size_t i = 0; i < rank; ++i) {
    const std::int64_t sa = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    const std::int64_t sb = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    NG_CHECK(sa == sb || sa == 1 || sb == 1, op, "shapes ", to_string(a), " and ", to_string(b),
             " cannot be broadcast (dim ", i, ": ", sa, " vs ", sb, ")");
    out[i] = sa == 1 ? sb : sa;
  }
  return out;
}

std::string to_string(const Shape& shape) {
  std::string text = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (i) text += ", ";
    text += std::to_string(shape[i]);
  }
  return text + "]";
}

}  // namespace normgrad
