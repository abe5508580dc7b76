#include "base/checked.h"

#include "base/error.h"

namespace normgrad {

std::int64_t checked_numel(const Shape& shape, const char* op) {
  // Both the count and the contiguous strides (the product with empty dims taken as 1, see
  // contiguous_strides) must fit: a shape like [0, 2^40, 2^40] holds nothing, but its strides
  // would still wrap.
  std::int64_t count = 1, span = 1;
  for (const std::int64_t size : shape) {
    NG_CHECK(size >= 0, op, "sizes must be non-negative, got shape ", shape);
    NG_CHECK(multiply_fits(count, size, count) && multiply_fits(span, size == 0 ? 1 : size, span),
             op, "shape ", shape, " has more elements than an int64 can count");
  }
  return count;
}

std::size_t checked_nbytes(const Shape& shape, std::size_t element_size, const char* op) {
  const std::int64_t count = checked_numel(shape, op);
  std::int64_t bytes = 0;
  NG_CHECK(multiply_fits(count, static_cast<std::int64_t>(element_size), bytes) &&
               static_cast<std::uint64_t>(bytes) <= max_tensor_bytes,
           op, "shape ", shape, " needs ", count, " elements of ", element_size,
           " bytes, more than the ", max_tensor_bytes, " bytes (2^48) a tensor may hold");
  return static_cast<std::size_t>(bytes);
}

}  // namespace normgrad
