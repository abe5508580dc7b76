#include "nn/norms/layer_norm.h"

#include "profiler/recorder.h"

namespace normgrad::nn {

LayerNorm::LayerNorm(Shape normalized_shape, LayerNormOptions options)
    : AffineNorm(std::move(normalized_shape), options.per_channel, options.gain, options.bias,
                 options.dtype, "LayerNorm"),
      options_(options) {}

Tensor LayerNorm::forward(const Tensor& x) {
  const profiler::ModuleSpan span(this, "LayerNorm");

  return layer_norm(x, normalized_dims(x), gain, bias,
                    {.eps = options_.eps, .per_channel = options_.per_channel});
}

std::optional<RowNorm> LayerNorm::row_form() const {
  if (per_channel() || normalized_shape().size() != 1) return std::nullopt;
  return RowNorm{.statistic = RowStatistic::Variance,
                 .options = {.eps = options_.eps},
                 .gain = gain,
                 .bias = bias};
}

}  // namespace normgrad::nn
