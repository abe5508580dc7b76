#pragma once
// Checks of the fused recurrent kernels' operands, shared by the backends: each check_* below
// returns the step's rows B and units H, read from its [B, H] state operand.

#include <cstdint>
#include <initializer_list>
#include <utility>

#include "backends/backend.h"
#include "base/error.h"

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
// One norm of a fused recurrent step over `width` values: not per channel, its k within the
// width; its gain, bias and their gradients (null where absent) contiguous with `width` values
// of `dtype`. A norm left out (applied = false) may have none of them.
inline void check_step_norm(const char* op, const char* name, bool applied,
                            const NormParams& params, std::int64_t width,
                            std::initializer_list<const TensorRef*> affine, DType dtype) {
  if (!applied) {
    for (const TensorRef* operand : affine)
      NG_CHECK(operand == nullptr, op, "the ", name, " norm is left out but has a gain or bias");
    return;
  }
  NG_CHECK(params.channels == 0, op, "the ", name, " norm cannot be per channel");
  NG_CHECK(params.centred || (params.k >= 0 && params.k <= width && params.divisor > 0), op, "the ",
           name, " norm's k = ", params.k, " must lie in [0, ", width, "] and its divisor (",
           params.divisor, ") be positive");
  for (const TensorRef* operand : affine) {
    if (operand == nullptr) continue;
    NG_CHECK(operand->numel() == width && operand->dtype == dtype &&
                 (operand->rank() == 0 || operand->strides.back() == 1) &&
                 (operand->rank() <= 1 || operand->strides[0] == operand->shape[1]),
             op, "the ", name, " norm's gain, bias and their gradients must be contiguous with ",
             width, " values of dtype ", dtype, ", got shape ", operand->shape, ", dtype ",
             operand->dtype);
  }
}

// The two norms of a normed GRU step over H units: `gates` over the 2H gate values and
// `candidate` over the H candidate values (check_step_norm).
inline void check_state_norms(const char* op, const GruStateNorms& norms, std::int64_t H,
                              DType dtype, const GruStateNormGrads* grads = nullptr) {
  const GruStateNormGrads none;
  const GruStateNormGrads& g = grads != nullptr ? *grads : none;
  check_step_norm(op, "gates", true, norms.gates, 2 * H,
                  {norms.gates_gain, norms.gates_bias, g.gates_gain, g.gates_bias}, dtype);
  check_step_norm(op, "candidate", true, norms.candidate, H,
                  {norms.candidate_gain, norms.candidate_bias, g.candidate_gain, g.candidate_bias},
                  dtype);
}

// A normed step's statistics: contiguous [4, rows] of the data's compute dtype (float32 for
// bfloat16 data).
inline void check_statistics(const char* op, const TensorRef& statistics, std::int64_t rows,
                             DType dtype) {
  const bool laid_out =
      rows == 0 ? statistics.shape == Shape({4, 0}) : dense_rows(statistics, 4, rows);
  NG_CHECK(laid_out && statistics.dtype == compute_dtype(dtype), op,
           "expects contiguous statistics [4, ", rows, "] of dtype ", compute_dtype(dtype),
           ", got shape ", statistics.shape, ", strides ", statistics.strides, ", dtype ",
           statistics.dtype);
}

inline StepExtent check_normed_gru_forward(const char* op, const GruStateNorms& norms,
                                           const TensorRef& h, const TensorRef& activations,
                                           const TensorRef& normalised, const TensorRef& statistics,
                                           const TensorRef& gx, const TensorRef& gh,
                                           const TensorRef& h_prev, const TensorRef* mask) {
  const StepExtent extent = check_gru_forward(op, h, activations, gx, gh, h_prev, mask);
  const auto [rows, H] = extent;
  check_rows(op, rows, {{&h, H}, {&normalised, 3 * H}});
  check_statistics(op, statistics, rows, h.dtype);
  check_state_norms(op, norms, H, h.dtype);
  return extent;
}

inline StepExtent check_normed_gru_backward(
    const char* op, const GruStateNorms& norms, const TensorRef& dgx, const TensorRef& dgh,
    const TensorRef& dh_prev, const GruStateNormGrads& affine, const TensorRef& dh,
    const TensorRef& activations, const TensorRef& normalised, const TensorRef& statistics,
    const TensorRef& gh, const TensorRef& h_prev, const TensorRef* mask) {
  const StepExtent extent =
      check_gru_backward(op, dgx, dgh, dh_prev, dh, activations, gh, h_prev, mask);
  const auto [rows, H] = extent;
  check_rows(op, rows, {{&dh, H}, {&normalised, 3 * H}});
  check_statistics(op, statistics, rows, dh.dtype);
  check_state_norms(op, norms, H, dh.dtype, &affine);
  return extent;
}
// The norms of an LSTM step over H units: `state` over the 4H state-side values and `cell` over
// the H cell values, each where applied (check_step_norm).
inline void check_lstm_norms(const char* op, const LstmStepNorms& norms, std::int64_t H,
                             DType dtype, const LstmStepNormGrads* grads = nullptr) {
  const LstmStepNormGrads none;
  const LstmStepNormGrads& g = grads != nullptr ? *grads : none;
  check_step_norm(op, "state", norms.normalise_state, norms.state, 4 * H,
                  {norms.state_gain, norms.state_bias, g.state_gain, g.state_bias}, dtype);
  check_step_norm(op, "cell", norms.normalise_cell, norms.cell, H,
                  {norms.cell_gain, norms.cell_bias, g.cell_gain, g.cell_bias}, dtype);
}

inline StepExtent check_lstm_step_forward(const char* op, const LstmStepNorms& norms,
                                          const TensorRef& state, const TensorRef& activations,
                                          const TensorRef& cell, const TensorRef& statistics,
                                          const TensorRef& gx, const TensorRef& gh,
                                          const TensorRef& h_prev, const TensorRef& c_prev,
                                          const TensorRef* mask) {
  const auto [rows, H] = extent_of(cell);
  check_rows(op, rows,
             {{&cell, H},
              {&state, 2 * H},
              {&activations, 4 * H},
              {&gx, 4 * H},
              {&gh, 4 * H},
              {&h_prev, H},
              {&c_prev, H}});
  check_mask(op, mask, rows, cell.dtype);
  check_statistics(op, statistics, rows, cell.dtype);
  check_lstm_norms(op, norms, H, cell.dtype);
  return {rows, H};
}

inline StepExtent check_lstm_step_backward(const char* op, const LstmStepNorms& norms,
                                           const TensorRef& dgx, const TensorRef& dgh,
                                           const TensorRef& dh_prev, const TensorRef& dc_prev,
                                           const LstmStepNormGrads& affine, const TensorRef& dstate,
                                           const TensorRef& state, const TensorRef& activations,
                                           const TensorRef& cell, const TensorRef& statistics,
                                           const TensorRef& gh, const TensorRef& c_prev,
                                           const TensorRef* mask) {
  const auto [rows, H] = extent_of(cell);
  check_rows(op, rows,
             {{&cell, H},
              {&dgx, 4 * H},
              {&dgh, 4 * H},
              {&dh_prev, H},
              {&dc_prev, H},
              {&dstate, 2 * H},
              {&state, 2 * H},
              {&activations, 4 * H},
              {&gh, 4 * H},
              {&c_prev, H}});
  check_mask(op, mask, rows, cell.dtype);
  check_statistics(op, statistics, rows, cell.dtype);
  check_lstm_norms(op, norms, H, cell.dtype, &affine);
  return {rows, H};
}
}  // namespace normgrad::backend
