#pragma once
// What the fused recurrent ops (recurrent_functional.cpp, gru_sequence.cpp) share when they
// hand a step to the backend: the mask as the kernels read it, optional operands as pointers,
// and a state norm's parameters, checked. Internal to nn/.

#include <cstdint>

#include "autograd/ops.h"
#include "autograd/primitives.h"
#include "backends/backend.h"
#include "core/error.h"
#include "core/tensor.h"
#include "core/tensor_internal.h"
#include "nn/mixed_precision.h"
#include "nn/norms/fused.h"
#include "nn/norms/row_norm_params.h"

namespace normgrad::nn::functional::kernel_args {

// The mask as the kernels want it: contiguous, in the data's dtype, never requiring grad.
inline Tensor mask(const Tensor& mask, DType dtype) {
  if (!mask.defined()) return Tensor();
  return ne(mask.detach(), 0.0).to(dtype).contiguous();
}

inline const backend::TensorRef* optional_ref(const Tensor& tensor, backend::TensorRef& storage) {
  if (!tensor.defined()) return nullptr;
  storage = normgrad::detail::ref(tensor);
  return &storage;
}

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
// differentiable to(), so that their gradients come back in float32 (nn/mixed_precision.h).
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

}  // namespace normgrad::nn::functional::kernel_args
