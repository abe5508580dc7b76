#include "nn/norms/weight_norm.h"

#include <vector>

#include "autograd/functions/norm.h"
#include "autograd/grad_mode.h"
#include "autograd/ops.h"
#include "base/error.h"

namespace normgrad::nn {

Tensor weight_norm(const Tensor& v, const Tensor& g, double eps) {
  NG_CHECK(v.defined() && g.defined(), "weight_norm", "v and g must be defined");
  NG_CHECK(v.dim() >= 1 && v.numel() > 0, "weight_norm",
           "v must be a non-empty weight [out, ...], got ", v.shape());
  NG_CHECK(g.shape() == Shape{v.size(0)}, "weight_norm", "g must have shape [", v.size(0),
           "] (one gain per output unit of v ", v.shape(), "), got ", g.shape());
  // Each row of v is one group of the L2 norm's per-channel form: [1, out, fan_in, 1], with
  // one gain per "channel", i.e. per output unit.
  const std::int64_t units = v.size(0);
  const std::int64_t fan_in = v.numel() / units;
  const Tensor rows = v.reshape({1, units, fan_in, 1});
  return l2_norm(rows, 2, g, Tensor(), {.eps = eps, .per_channel = true}).reshape(v.shape());
}

WeightNorm::WeightNorm(const Tensor& weight, WeightNormOptions options) : options_(options) {
  NG_CHECK(weight.defined() && weight.dim() >= 1 && weight.numel() > 0, "WeightNorm",
           "expects a non-empty weight [out, ...], got ",
           weight.defined() ? weight.shape() : Shape{});
  NG_CHECK(is_floating(weight.dtype()), "WeightNorm", "expects a floating-point weight, got ",
           weight.dtype());
  NG_CHECK(options_.eps >= 0, "WeightNorm", "eps must be non-negative, got ", options_.eps);
  NoGradGuard no_grad;
  std::vector<std::int64_t> row_dims;
  for (std::int64_t d = 1; d < weight.dim(); ++d) row_dims.push_back(d);
  Tensor norms = row_dims.empty() ? abs(weight) : sqrt(square(weight).sum(row_dims));
  direction = register_parameter("direction", weight.detach().clone());
  gain = register_parameter("gain", norms.contiguous());
}

Tensor WeightNorm::weight() const { return weight_norm(direction, gain, options_.eps); }

void WeightNorm::reset(const Tensor& weight) {
  NG_CHECK(weight.defined() && weight.shape() == direction.shape() &&
               weight.dtype() == direction.dtype(),
           "WeightNorm::reset", "expects a weight ", direction.shape(), " of ", direction.dtype(),
           ", got ", weight.defined() ? weight.shape() : Shape{}, " of ",
           weight.defined() ? weight.dtype() : direction.dtype());
  NoGradGuard no_grad;
  std::vector<std::int64_t> row_dims;
  for (std::int64_t d = 1; d < weight.dim(); ++d) row_dims.push_back(d);
  direction.copy_(weight);
  gain.copy_(row_dims.empty() ? abs(weight) : sqrt(square(weight).sum(row_dims)));
}

Tensor WeightNorm::init_from_data(const Tensor& outputs, std::int64_t unit_dim, double scale) {
  const std::int64_t units = gain.size(0);
  NG_CHECK(outputs.defined() && outputs.dim() >= 2, "WeightNorm::init_from_data",
           "expects outputs [N, units, ...], got ", outputs.defined() ? outputs.shape() : Shape{});
  if (unit_dim < 0) unit_dim += outputs.dim();
  NG_CHECK(unit_dim >= 0 && unit_dim < outputs.dim() && outputs.size(unit_dim) == units,
           "WeightNorm::init_from_data", "dim ", unit_dim, " of outputs ", outputs.shape(),
           " must hold the ", units, " output units");
  NG_CHECK(outputs.numel() / units >= 2, "WeightNorm::init_from_data",
           "needs at least 2 values per unit to estimate a spread, got outputs ", outputs.shape());
  NG_CHECK(scale > 0, "WeightNorm::init_from_data", "scale must be positive, got ", scale);
  NoGradGuard no_grad;
  // Statistics per unit over every other dim (population variance, as the WeightNorm code).
  const Tensor per_unit = outputs.detach().transpose(0, unit_dim).reshape({units, -1});
  const Tensor mean = per_unit.mean({1});
  const Tensor std = sqrt(square(per_unit - mean.unsqueeze(1)).mean({1}) + 1e-10);
  // Outputs are linear in g: multiplying g_i by scale / std_i sets unit i's spread.
  gain.mul_((scale / std).to(gain.dtype()));
  return (-mean * scale / std).to(gain.dtype());
}

}  // namespace normgrad::nn
