#include "nn/norms/l2_norm.h"

#include "profiler/recorder.h"

namespace normgrad::nn {

L2Norm::L2Norm(Shape normalized_shape, L2NormOptions options)
    : AffineNorm(std::move(normalized_shape), options.per_channel, options.gain, options.bias,
                 options.dtype, "L2Norm"),
      options_(options) {}

Tensor L2Norm::forward(const Tensor& x) {
  const profiler::ModuleSpan span(this, "L2Norm");

  return l2_norm(x, normalized_dims(x), gain, bias,
                 {.eps = options_.eps, .per_channel = options_.per_channel});
}

std::optional<RowNorm> L2Norm::row_form() const {
  if (per_channel() || normalized_shape().size() != 1) return std::nullopt;
  return RowNorm{.statistic = RowStatistic::SumOfSquares,
                 .options = {.eps = options_.eps},
                 .gain = gain,
                 .bias = bias};
}

}  // namespace normgrad::nn
