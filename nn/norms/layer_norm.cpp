#include "nn/norms/layer_norm.h"

#include "nn/norms/norm_module_common.h"

namespace normgrad::nn {

LayerNorm::LayerNorm(Shape normalized_shape, LayerNormOptions options)
    : normalized_shape_(std::move(normalized_shape)), options_(options) {
  detail::check_normalized_shape(normalized_shape_, options_.per_channel, "LayerNorm");
  const TensorOptions tensor_options{.dtype = options_.dtype};
  if (options_.gain) gain = register_parameter("gain", ones(normalized_shape_, tensor_options));
  if (options_.bias) bias = register_parameter("bias", zeros(normalized_shape_, tensor_options));
}

Tensor LayerNorm::forward(const Tensor& x) const {
  const std::int64_t dims =
      detail::normalized_dims_for(x, normalized_shape_, options_.per_channel, "LayerNorm");
  return layer_norm(x, dims, gain, bias, {.eps = options_.eps, .per_channel = options_.per_channel});
}

}  // namespace normgrad::nn
