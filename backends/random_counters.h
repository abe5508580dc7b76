#pragma once
// The counters cell of Backend::random_with_counters: int64 [2] holding a draw's seed and base
// offset, which both backends check the same way before reading it.

#include "backends/backend.h"
#include "base/error.h"

namespace normgrad::backend {

inline void check_random_counters(const TensorRef& counters, const char* op) {
  NG_CHECK(counters.dtype == DType::Int64 && counters.numel() == 2 && counters.rank() == 1 &&
               counters.strides[0] == 1,
           op, "the counters must be a contiguous int64 tensor of 2 values (seed, offset), got ",
           counters.dtype, " of shape ", counters.shape);
}

}  // namespace normgrad::backend
