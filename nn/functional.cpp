#include "nn/functional.h"

#include "autograd/mixed_precision.h"
#include "autograd/ops.h"
#include "base/error.h"

namespace normgrad::nn::functional {

Tensor linear(const Tensor& input, const Tensor& weight_in, const Tensor& bias_in) {
  const Tensor weight = in_input_dtype(weight_in, input);
  const Tensor bias = in_input_dtype(bias_in, input);
  NG_CHECK(input.defined() && weight.defined(), "linear", "input and weight must be defined");
  NG_CHECK(weight.dim() == 2, "linear", "weight must be 2-d [out_features, in_features], got ",
           weight.shape());
  NG_CHECK(input.dim() >= 1 && input.size(-1) == weight.size(1), "linear", "input of shape ",
           input.shape(), " does not end in in_features = ", weight.size(1), " (weight ",
           weight.shape(), ")");
  NG_CHECK(!bias.defined() || bias.shape() == Shape{weight.size(0)}, "linear",
           "bias must have shape [", weight.size(0), "], got ", bias.shape());
  // Leading dims are flattened into rows, so that [T, B, in] is one GEMM (and its weight
  // gradient one more), not T batched ones summed afterwards.
  const Tensor rows = input.dim() > 2 ? input.reshape({-1, input.size(-1)}) : input;
  Tensor output =
      bias.defined() && rows.dim() == 2 ? addmm(bias, rows, weight.t()) : matmul(rows, weight.t());
  if (bias.defined() && rows.dim() == 1) output = output + bias;
  if (input.dim() <= 2) return output;
  Shape shape = input.shape();
  shape.back() = weight.size(0);
  return output.view(shape);
}

}  // namespace normgrad::nn::functional
