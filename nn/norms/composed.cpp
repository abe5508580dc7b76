#include "nn/norms/composed.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "autograd/grad_mode.h"
#include "autograd/ops.h"
#include "base/error.h"

namespace normgrad::nn {

namespace {

// The trailing dims of x that form one normalised group.
std::vector<std::int64_t> group_dims(const Tensor& x, std::int64_t normalized_dims,
                                     const char* name) {
  NG_CHECK(x.defined(), name, "the input is undefined");
  NG_CHECK(is_floating(x.dtype()), name, "expects a floating-point input, got ", x.dtype());
  NG_CHECK(normalized_dims >= 1 && normalized_dims <= x.dim(), name, "cannot normalise the last ",
           normalized_dims, " dims of a tensor of shape ", x.shape());
  std::vector<std::int64_t> dims;
  for (std::int64_t d = x.dim() - normalized_dims; d < x.dim(); ++d) dims.push_back(d);
  return dims;
}

Tensor affine(Tensor y, const Tensor& gain, const Tensor& bias) {
  if (gain.defined()) y = y * gain;
  if (bias.defined()) y = y + bias;
  return y;
}

// a / r, with r from the mean square `mean_square` and eps placed as asked.
Tensor divide_by_rms(const Tensor& x, const Tensor& mean_square, double eps,
                     EpsPlacement placement) {
  if (placement == EpsPlacement::InsideSqrt) return x * rsqrt(mean_square + eps);
  return x / (sqrt(mean_square) + eps);
}

}  // namespace

Tensor layer_norm_composed(const Tensor& x, std::int64_t normalized_dims, const Tensor& gain,
                           const Tensor& bias, double eps) {
  const auto dims = group_dims(x, normalized_dims, "layer_norm");
  const Tensor centred = x - x.mean(dims, true);
  // Centred two-pass variance: never E[x^2] - E[x]^2.
  const Tensor variance = square(centred).mean(dims, true);
  return affine(centred * rsqrt(variance + eps), gain, bias);
}

Tensor rms_norm_composed(const Tensor& x, std::int64_t normalized_dims, const Tensor& gain,
                         const Tensor& bias, double eps, EpsPlacement placement) {
  const auto dims = group_dims(x, normalized_dims, "rms_norm");
  return affine(divide_by_rms(x, square(x).mean(dims, true), eps, placement), gain, bias);
}

Tensor partial_rms_norm_composed(const Tensor& x, std::int64_t normalized_dims, std::int64_t k,
                                 const Tensor& gain, const Tensor& bias, double eps,
                                 EpsPlacement placement) {
  group_dims(x, normalized_dims, "partial_rms_norm");
  // Flatten each group to one dim, take the statistic of its first k values only: the
  // gradient reaches the other values through the division alone.
  const Tensor flat = x.flatten(x.dim() - normalized_dims);
  const std::int64_t n = flat.size(-1);
  NG_CHECK(k >= 1 && k <= n, "partial_rms_norm", "k = ", k, " must lie in [1, ", n, "]");
  const Tensor mean_square = square(flat.narrow(-1, 0, k)).mean({-1}, true);
  return affine(divide_by_rms(flat, mean_square, eps, placement).reshape(x.shape()), gain, bias);
}

Tensor l2_norm_composed(const Tensor& x, std::int64_t normalized_dims, const Tensor& gain,
                        const Tensor& bias, double eps) {
  const auto dims = group_dims(x, normalized_dims, "l2_norm");
  return affine(x * rsqrt(square(x).sum(dims, true) + eps), gain, bias);
}

Tensor weight_norm_composed(const Tensor& v, const Tensor& g, double eps) {
  NG_CHECK(v.dim() >= 1 && g.shape() == Shape{v.size(0)}, "weight_norm",
           "expects v [out, ...] and g [out], got ", v.shape(), " and ", g.shape());
  // Treat v as [out, fan_in] so that every row is one group, and g as a column.
  const Tensor rows = v.reshape({v.size(0), -1});
  return (l2_norm_composed(rows, 1, Tensor(), Tensor(), eps) * g.unsqueeze(1)).reshape(v.shape());
}

Tensor batch_norm_composed(const Tensor& x, const Tensor& gain, const Tensor& bias,
                           const Tensor& running_mean, const Tensor& running_var, bool training,
                           double momentum, double eps) {
  NG_CHECK(x.defined() && x.dim() >= 2, "batch_norm", "expects an input [N, C, ...], got ",
           x.defined() ? x.shape() : Shape{});
  std::vector<std::int64_t> dims{0};
  for (std::int64_t d = 2; d < x.dim(); ++d) dims.push_back(d);
  // [C] operands seen as [1, C, 1, ...], to broadcast against x.
  Shape channel_view(static_cast<std::size_t>(x.dim()), 1);
  channel_view[1] = x.size(1);
  const auto per_channel = [&](const Tensor& t) { return t.defined() ? t.view(channel_view) : t; };
  if (!training)
    return affine((x - per_channel(running_mean)) * rsqrt(per_channel(running_var) + eps),
                  per_channel(gain), per_channel(bias));
  const Tensor mean = x.mean(dims, true);
  const Tensor centred = x - mean;
  const Tensor variance = square(centred).mean(dims, true);
  if (running_mean.defined()) {
    NoGradGuard no_grad;
    double count = 1;  // values per channel
    for (std::int64_t d : dims) count *= static_cast<double>(x.size(d));
    Tensor target_mean = running_mean, target_var = running_var;
    target_mean.mul_(1 - momentum).add_(mean.detach().view({x.size(1)}), momentum);
    target_var.mul_(1 - momentum)
        .add_(variance.detach().view({x.size(1)}), momentum * count / (count - 1));
  }
  return affine(centred * rsqrt(variance + eps), per_channel(gain), per_channel(bias));
}

std::int64_t partial_count(std::int64_t n, double p, PartialRounding rounding) {
  NG_CHECK(n >= 1, "partial_count", "the group size must be positive, got ", n);
  NG_CHECK(p > 0 && p <= 1, "partial_count", "p must lie in (0, 1], got ", p);
  const double exact = static_cast<double>(n) * p;
  // A tolerance keeps 1024 * 0.0625 = 64 from becoming 65 through rounding error.
  const double rounded =
      rounding == PartialRounding::Ceil ? std::ceil(exact - 1e-9) : std::floor(exact + 1e-9);
  return std::min<std::int64_t>(n, std::max<std::int64_t>(1, static_cast<std::int64_t>(rounded)));
}

}  // namespace normgrad::nn
