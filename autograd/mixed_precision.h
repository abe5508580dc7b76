#pragma once
// Mixed precision: parameters kept in float32 meet bfloat16 activations. A layer whose input is
// bfloat16 rounds its float32 parameters to bfloat16 for the op (linear's weight and bias, a
// norm's gain and bias); the rounding is a differentiable to(), so the parameter's gradient
// arrives back in float32, and the optimiser updates the float32 master copy:
//
//   nn::Linear layer(512, 512);                          // float32 weights
//   Tensor y = layer.forward(x.to(DType::BFloat16));      // a bfloat16 product, float32 sums
//   loss(y.to(DType::Float32)).backward();               // layer.weight.grad() is float32
//
// Any other mix of dtypes stays an error of the op.

#include "core/tensor.h"

namespace normgrad {

// Whether a layer whose parameters are of dtype `parameters` takes input of dtype `input`: its
// own dtype, or bfloat16 for float32 parameters.
inline bool takes_input_dtype(DType input, DType parameters) {
  return input == parameters || (input == DType::BFloat16 && parameters == DType::Float32);
}

// `parameter` in `input`'s dtype where input is bfloat16 and parameter float32; else unchanged.
inline Tensor in_input_dtype(const Tensor& parameter, const Tensor& input) {
  if (parameter.defined() && input.defined() && input.dtype() == DType::BFloat16 &&
      parameter.dtype() == DType::Float32)
    return parameter.to(DType::BFloat16);
  return parameter;
}

}  // namespace normgrad
