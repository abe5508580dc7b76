#pragma once
// What the fused recurrent ops (recurrent.cpp, recurrent_sequence.cpp) share when they hand a
// step to the backend: the mask as the kernels read it, optional operands as pointers, and a
// state norm's parameters, checked. Internal to autograd/functions/.

#include <array>
#include <cstdint>
#include <span>

#include "autograd/functions/norm.h"
#include "autograd/mixed_precision.h"
#include "autograd/ops.h"
#include "autograd/primitives.h"
#include "backends/backend.h"
#include "base/error.h"
#include "core/tensor.h"
#include "core/tensor_internal.h"
#include "autograd/functions/recurrent.h"

namespace normgrad::kernel_args {

// The mask as the kernels want it: contiguous, in the data's dtype, never requiring grad.
inline Tensor mask(const Tensor& mask, DType dtype) {
  if (!mask.defined()) return Tensor();
  return ne(mask.detach(), 0.0).to(dtype).contiguous();
}

using normgrad::detail::optional_ref;

// A state norm's gain or bias, checked against the data and its block's width, contiguous.
inline Tensor norm_parameter(const Tensor& parameter, std::int64_t width, const Tensor& data,
                             const char* op, const char* what) {
  if (!parameter.defined()) return parameter;
  NG_CHECK(parameter.shape() == Shape({width}), op, what, " must be [", width, "], got ",
           parameter.shape());
  autograd::primitive::check_same_dtype(data, parameter, op);
  autograd::primitive::check_same_device(data, parameter, op);
  return parameter.contiguous().detach();
}

// Mixed precision: a norm's float32 gain and bias rounded for bfloat16 data through a
// differentiable to(), so that their gradients come back in float32 (autograd/mixed_precision.h).
inline RowNorm for_input(RowNorm norm, const Tensor& data) {
  norm.gain = in_input_dtype(norm.gain, data);
  norm.bias = in_input_dtype(norm.bias, data);
  return norm;
}

inline backend::NormParams norm_params(const RowNorm& norm, std::int64_t width, const char* op,
                                       const char* what) {
  NG_CHECK(!norm.options.per_channel, op, what, " cannot be per channel");
  NG_CHECK(norm.options.eps >= 0, op, what, "'s eps must be non-negative, got ", norm.options.eps);
  NG_CHECK(norm.statistic != RowStatistic::MeanSquare || (norm.k >= 0 && norm.k <= width), op, what,
           "'s k = ", norm.k, " must lie in [1, ", width, "]");
  return kernel_params(norm.statistic, norm.k, width, norm.options);
}

// A GRU's state norms as the step kernels take them: each norm's NormParams (the pointers to
// gains and biases left null), and those gains and biases checked and contiguous, in the order
// [gates gain, gates bias, candidate gain, candidate bias].
struct GruNorms {
  backend::GruStateNorms params;
  std::array<Tensor, 4> affine;
};

inline GruNorms gru_norms(const GruStateNorms& norms, std::int64_t hidden, const Tensor& data,
                          const char* op) {
  return {{.gates = norm_params(norms.gates, 2 * hidden, op, "the gates norm"),
           .candidate = norm_params(norms.candidate, hidden, op, "the candidate norm")},
          {norm_parameter(norms.gates.gain, 2 * hidden, data, op, "the gates norm's gain"),
           norm_parameter(norms.gates.bias, 2 * hidden, data, op, "the gates norm's bias"),
           norm_parameter(norms.candidate.gain, hidden, data, op, "the candidate norm's gain"),
           norm_parameter(norms.candidate.bias, hidden, data, op, "the candidate norm's bias")}};
}

// `params` pointing at `affine` (in GruNorms' order; undefined ones: null) through `refs`.
inline backend::GruStateNorms with_affine(backend::GruStateNorms params,
                                          std::span<const Tensor, 4> affine,
                                          std::array<backend::TensorRef, 4>& refs) {
  params.gates_gain = optional_ref(affine[0], refs[0]);
  params.gates_bias = optional_ref(affine[1], refs[1]);
  params.candidate_gain = optional_ref(affine[2], refs[2]);
  params.candidate_bias = optional_ref(affine[3], refs[3]);
  return params;
}

// Where a step's backward writes the gradients of the gains and biases: `grads`, in GruNorms'
// order (undefined ones: not wanted), through `refs`.
inline backend::GruStateNormGrads affine_grads(std::span<const Tensor, 4> grads,
                                               std::array<backend::TensorRef, 4>& refs) {
  return {optional_ref(grads[0], refs[0]), optional_ref(grads[1], refs[1]),
          optional_ref(grads[2], refs[2]), optional_ref(grads[3], refs[3])};
}

// An LSTM step's norms as its kernels take them, as GruNorms has a GRU's: which are applied,
// their NormParams, and their gains and biases checked and contiguous, in the order
// [state gain, state bias, cell gain, cell bias] (undefined where a norm is left out).
struct LstmNorms {
  backend::LstmStepNorms params;
  std::array<Tensor, 4> affine;
};

// The norms rounded for bfloat16 data, as for_input does one.
inline LstmStepNorms for_input(const LstmStepNorms& norms, const Tensor& data) {
  LstmStepNorms result;
  if (norms.state) result.state = for_input(*norms.state, data);
  if (norms.cell) result.cell = for_input(*norms.cell, data);
  return result;
}

inline LstmNorms lstm_norms(const LstmStepNorms& norms, std::int64_t hidden, const Tensor& data,
                            const char* op) {
  LstmNorms result;
  result.params.normalise_state = norms.state.has_value();
  result.params.normalise_cell = norms.cell.has_value();
  if (norms.state) {
    result.params.state = norm_params(*norms.state, 4 * hidden, op, "the state norm");
    result.affine[0] =
        norm_parameter(norms.state->gain, 4 * hidden, data, op, "the state norm's gain");
    result.affine[1] =
        norm_parameter(norms.state->bias, 4 * hidden, data, op, "the state norm's bias");
  }
  if (norms.cell) {
    result.params.cell = norm_params(*norms.cell, hidden, op, "the cell norm");
    result.affine[2] = norm_parameter(norms.cell->gain, hidden, data, op, "the cell norm's gain");
    result.affine[3] = norm_parameter(norms.cell->bias, hidden, data, op, "the cell norm's bias");
  }
  return result;
}

// `params` pointing at `affine` (in LstmNorms' order; undefined ones: null) through `refs`.
inline backend::LstmStepNorms with_affine(backend::LstmStepNorms params,
                                          std::span<const Tensor, 4> affine,
                                          std::array<backend::TensorRef, 4>& refs) {
  params.state_gain = optional_ref(affine[0], refs[0]);
  params.state_bias = optional_ref(affine[1], refs[1]);
  params.cell_gain = optional_ref(affine[2], refs[2]);
  params.cell_bias = optional_ref(affine[3], refs[3]);
  return params;
}

// Where an LSTM step's backward writes the gradients of the gains and biases: `grads`, in
// LstmNorms' order (undefined ones: not wanted), through `refs`.
inline backend::LstmStepNormGrads lstm_affine_grads(std::span<const Tensor, 4> grads,
                                                    std::array<backend::TensorRef, 4>& refs) {
  return {optional_ref(grads[0], refs[0]), optional_ref(grads[1], refs[1]),
          optional_ref(grads[2], refs[2]), optional_ref(grads[3], refs[3])};
}

}  // namespace normgrad::kernel_args
