#pragma once
// Checks of the fused recurrent kernels' operands, shared by the backends.

#include <cstdint>
#include <initializer_list>
#include <utility>

#include "backends/backend.h"
#include "core/error.h"

namespace normgrad::backend {

// Checks that every operand is contiguous with the expected [rows, width] shape and the dtype
// of the first; the op layer guarantees this, so a failure here is a bug in normgrad.
inline void check_rows(const char* op, std::int64_t rows,
                       std::initializer_list<std::pair<const TensorRef*, std::int64_t>> operands) {
  const DType dtype = operands.begin()->first->dtype;
  for (const auto& [operand, width] : operands) {
    NG_CHECK(operand->shape == Shape({rows, width}) && operand->strides == Strides({width, 1}) &&
                 operand->dtype == dtype,
             op, "expects contiguous [", rows, ", ", width, "] operands of one dtype, got shape ",
             operand->shape, ", strides ", operand->strides, ", dtype ", operand->dtype);
  }
}

inline void check_mask(const char* op, const TensorRef* mask, std::int64_t rows, DType dtype) {
  if (!mask) return;
  NG_CHECK(mask->shape == Shape({rows}) && mask->strides == Strides({1}) && mask->dtype == dtype,
           op, "expects a contiguous mask [", rows, "] of dtype ", dtype, ", got shape ",
           mask->shape, ", dtype ", mask->dtype);
}

}  // namespace normgrad::backend
