#pragma once
// Checks of the fused recurrent kernels' operands, shared by the backends: each check_* below
// returns the step's rows B and units H, read from its [B, H] state operand.

#include <cstdint>
#include <initializer_list>
#include <utility>

#include "backends/backend.h"
#include "core/error.h"

namespace normgrad::backend {

// True when element (r, c) of a [rows, width] operand lies at r * width + c. A dim of size 1
// can have any stride (Tensor::contiguous() does not copy for it: a row selected from a
// [1, T, W] tensor is [1, W] with strides [T W, 1]), so only the strides of longer dims count.
inline bool dense_rows(const TensorRef& operand, std::int64_t rows, std::int64_t width) {
  return operand.shape == Shape({rows, width}) && operand.strides.size() == 2 &&
         (rows <= 1 || operand.strides[0] == width) && (width <= 1 || operand.strides[1] == 1);
}

// Checks that every operand is contiguous with the expected [rows, width] shape and the dtype
// of the first; the op layer guarantees this, so a failure here is a bug in normgrad.
inline void check_rows(const char* op, std::int64_t rows,
                       std::initializer_list<std::pair<const TensorRef*, std::int64_t>> operands) {
  const DType dtype = operands.begin()->first->dtype;
  for (const auto& [operand, width] : operands) {
    NG_CHECK(dense_rows(*operand, rows, width) && operand->dtype == dtype, op,
             "expects contiguous [", rows, ", ", width, "] operands of one dtype, got shape ",
             operand->shape, ", strides ", operand->strides, ", dtype ", operand->dtype);
  }
}

inline void check_mask(const char* op, const TensorRef* mask, std::int64_t rows, DType dtype) {
  if (!mask) return;
  NG_CHECK(mask->shape == Shape({rows}) && mask->strides.size() == 1 &&
               (rows <= 1 || mask->strides[0] == 1) && mask->dtype == dtype,
           op, "expects a contiguous mask [", rows, "] of dtype ", dtype, ", got shape ",
           mask->shape, ", dtype ", mask->dtype);
}

struct StepExtent {
  std::int64_t rows = 0, units = 0;
};

// Rows and units of a [B, H] state operand (0 when it is not a matrix; check_rows then fails).
inline StepExtent extent_of(const TensorRef& state) {
  return {state.shape.empty() ? 0 : state.shape[0], state.rank() == 2 ? state.shape[1] : 0};
}

inline StepExtent check_gru_forward(const char* op, const TensorRef& h,
                                    const TensorRef& activations, const TensorRef& gx,
                                    const TensorRef& gh, const TensorRef& h_prev,
                                    const TensorRef* mask) {
  const auto [rows, H] = extent_of(h);
  check_rows(op, rows, {{&h, H}, {&activations, 3 * H}, {&gx, 3 * H}, {&gh, 3 * H}, {&h_prev, H}});
  check_mask(op, mask, rows, h.dtype);
  return {rows, H};
}

inline StepExtent check_gru_backward(const char* op, const TensorRef& dgx, const TensorRef& dgh,
                                     const TensorRef& dh_prev, const TensorRef& dh,
                                     const TensorRef& activations, const TensorRef& gh,
                                     const TensorRef& h_prev, const TensorRef* mask) {
  const auto [rows, H] = extent_of(dh);
  check_rows(op, rows,
             {{&dh, H},
              {&dgx, 3 * H},
              {&dgh, 3 * H},
              {&dh_prev, H},
              {&activations, 3 * H},
              {&gh, 3 * H},
              {&h_prev, H}});
  check_mask(op, mask, rows, dh.dtype);
  return {rows, H};
}

inline StepExtent check_lstm_forward(const char* op, const TensorRef& c,
                                     const TensorRef& activations, const TensorRef& gates,
                                     const TensorRef& c_prev, const TensorRef* mask) {
  const auto [rows, H] = extent_of(c);
  check_rows(op, rows, {{&c, H}, {&activations, 3 * H}, {&gates, 4 * H}, {&c_prev, H}});
  check_mask(op, mask, rows, c.dtype);
  return {rows, H};
}

inline StepExtent check_lstm_backward(const char* op, const TensorRef& dgates,
                                      const TensorRef& dc_prev, const TensorRef& dc,
                                      const TensorRef& activations, const TensorRef& c_prev,
                                      const TensorRef* mask) {
  const auto [rows, H] = extent_of(dc);
  check_rows(op, rows,
             {{&dc, H}, {&dgates, 4 * H}, {&dc_prev, H}, {&activations, 3 * H}, {&c_prev, H}});
  check_mask(op, mask, rows, dc.dtype);
  return {rows, H};
}
}  // namespace normgrad::backend
