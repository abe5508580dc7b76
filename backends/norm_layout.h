#pragma once
// How the fused norm kernels of both backends find the rows of their [rows, n] operands.
//
// An operand is contiguous (row r at r n), or two-dimensional with its values adjacent within
// a row and its rows evenly spaced at least n apart (row r at r stride): a slice of wider
// rows, as the gates of a recurrent cell are a slice of its projection. The kernels read and
// write such a slice where it lies, which spares the op layer a copy of it in, and of its
// gradient out.

#include <cstdint>

#include "backends/backend.h"
#include "base/error.h"

namespace normgrad::backend {

// The distance between consecutive rows of `operand` read as [rows, n] (its element count must
// be rows n). `what` names the operand in the error for any other layout, which the op layer
// never passes.
inline std::int64_t norm_row_stride(const TensorRef& operand, std::int64_t rows, std::int64_t n,
                                    const char* op, const char* what) {
  NG_CHECK(operand.numel() == rows * n, op, what, " has ", operand.numel(), " values, expected ",
           rows, " rows of ", n);
  if (rows * n == 0) return n;  // nothing to lay out
  // Contiguous: sizes of 1 may have any stride.
  bool contiguous = true;
  std::int64_t expected = 1;
  for (std::int64_t d = operand.rank() - 1; d >= 0; --d) {
    if (operand.shape[d] != 1 && operand.strides[d] != expected) contiguous = false;
    expected *= operand.shape[d];
  }
  if (contiguous) return n;
  const bool strided_rows = operand.rank() == 2 && operand.shape[0] == rows &&
                            operand.shape[1] == n && (n <= 1 || operand.strides[1] == 1) &&
                            operand.strides[0] >= n;
  NG_CHECK(strided_rows, op, what, " must be contiguous, or [", rows, ", ", n,
           "] with adjacent values in a row and rows at least ", n, " apart; got shape ",
           operand.shape, ", strides ", operand.strides);
  return operand.strides[0];
}

}  // namespace normgrad::backend
