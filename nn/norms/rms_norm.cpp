#include "nn/norms/rms_norm.h"

#include "nn/norms/norm_module_common.h"

namespace normgrad::nn {

RMSNorm::RMSNorm(Shape normalized_shape, RMSNormOptions options)
    : normalized_shape_(std::move(normalized_shape)), options_(options) {
  detail::check_normalized_shape(normalized_shape_, options_.per_channel, "RMSNorm");
  NG_CHECK(options_.partial > 0 && options_.partial <= 1, "RMSNorm",
           "the partial fraction p must lie in (0, 1], got ", options_.partial);
  const TensorOptions tensor_options{.dtype = options_.dtype};
  if (options_.gain) gain = register_parameter("gain", ones(normalized_shape_, tensor_options));
  if (options_.bias) bias = register_parameter("bias", zeros(normalized_shape_, tensor_options));
}

Tensor RMSNorm::forward(const Tensor& x) const {
  const std::int64_t dims =
      detail::normalized_dims_for(x, normalized_shape_, options_.per_channel, "RMSNorm");
  const NormOptions norm_options{.eps = options_.eps, .placement = options_.placement,
                                 .per_channel = options_.per_channel};
  if (options_.partial >= 1) return rms_norm(x, dims, gain, bias, norm_options);
  std::int64_t n = 1;
  for (std::int64_t d = x.dim() - dims; d < x.dim(); ++d) n *= x.size(d);
  const std::int64_t k = partial_count(n, options_.partial, options_.rounding);
  return partial_rms_norm(x, dims, k, gain, bias, norm_options);
}

}  // namespace normgrad::nn
