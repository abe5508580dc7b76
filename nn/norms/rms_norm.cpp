#include "nn/norms/rms_norm.h"

#include "base/error.h"
#include "profiler/recorder.h"

namespace normgrad::nn {

RMSNorm::RMSNorm(Shape normalized_shape, RMSNormOptions options)
    : AffineNorm(std::move(normalized_shape), options.per_channel, options.gain, options.bias,
                 options.dtype, "RMSNorm"),
      options_(options) {
  NG_CHECK(options_.partial > 0 && options_.partial <= 1, "RMSNorm",
           "the partial fraction p must lie in (0, 1], got ", options_.partial);
}

Tensor RMSNorm::forward(const Tensor& x) {
  const profiler::ModuleSpan span(this, "RMSNorm");

  const std::int64_t dims = normalized_dims(x);
  const NormOptions norm_options{
      .eps = options_.eps, .placement = options_.placement, .per_channel = options_.per_channel};
  if (options_.partial >= 1) return rms_norm(x, dims, gain, bias, norm_options);
  const std::int64_t k = partial_count(group_size(x), options_.partial, options_.rounding);
  return partial_rms_norm(x, dims, k, gain, bias, norm_options);
}

std::optional<RowNorm> RMSNorm::row_form() const {
  if (per_channel() || normalized_shape().size() != 1) return std::nullopt;
  const std::int64_t n = normalized_shape()[0];
  return RowNorm{
      .statistic = RowStatistic::MeanSquare,
      .k = options_.partial >= 1 ? 0 : partial_count(n, options_.partial, options_.rounding),
      .options = {.eps = options_.eps, .placement = options_.placement},
      .gain = gain,
      .bias = bias};
}

}  // namespace normgrad::nn
