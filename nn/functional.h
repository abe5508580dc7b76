#pragma once
// Stateless building blocks of models, composed from the differentiable ops (so their
// gradients come for free and are checked by the same gradcheck). Losses are in losses.h.

#include "core/tensor.h"

namespace normgrad::nn::functional {

// y = x W^T + b, with W of shape [out, in] (as in PyTorch) and b of shape [out] or undefined.
// A bfloat16 input takes float32 W and b rounded to bfloat16 (autograd/mixed_precision.h).
Tensor linear(const Tensor& input, const Tensor& weight, const Tensor& bias = Tensor());

}  // namespace normgrad::nn::functional
