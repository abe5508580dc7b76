#pragma once
// The normalisers written with primitive differentiable ops. They are the reference — the
// "composed twin" — that every fused kernel is tested against, and their gradients come from
// autograd, checked by gradcheck. Formulas (the paper's sections 3 and 4), per normalised group
// of n values a_1..a_n (the trailing `normalized_dims` dims of x), with gain g and bias b
// broadcast against x:
//   LayerNorm  y = g (a - mean(a)) / sqrt(var(a) + eps) + b          (population variance)
//   RMSNorm    y = g a / sqrt(mean(a^2) + eps) + b                   (eps inside, default)
//              y = g a / (sqrt(mean(a^2)) + eps) + b                 (eps outside, as the
//                                                                      paper's PyTorch code)
//   pRMSNorm   as RMSNorm, with mean(a^2) taken over the first k values only
//   L2Norm     y = g a / sqrt(sum(a^2) + eps) + b                    (the Euclidean norm)
//   WeightNorm w = g v / sqrt(sum(v^2) + eps) per row of v: a weight, not an activation
// An undefined gain or bias is left out.
//
// BatchNorm normalises each channel of x = [N, C, ...] over the batch and the spatial dims:
//   training    y = g (x - mean) / sqrt(var + eps) + b, mean and population var over dims
//               {0, 2, 3, ...}; the running estimates, when given, are updated in place
//               as batch_norm (autograd/functions/batch_norm.h) documents
//   evaluation  y = g (x - running_mean) / sqrt(running_var + eps) + b
// gain, bias and the running estimates have shape [C].

#include <cstdint>

#include "autograd/functions/norm.h"
#include "core/tensor.h"

namespace normgrad::nn {

Tensor layer_norm_composed(const Tensor& x, std::int64_t normalized_dims, const Tensor& gain,
                           const Tensor& bias, double eps);
Tensor rms_norm_composed(const Tensor& x, std::int64_t normalized_dims, const Tensor& gain,
                         const Tensor& bias, double eps,
                         EpsPlacement placement = EpsPlacement::InsideSqrt);
// `k` leading values of each flattened group give the statistic: 1 <= k <= n.
Tensor partial_rms_norm_composed(const Tensor& x, std::int64_t normalized_dims, std::int64_t k,
                                 const Tensor& gain, const Tensor& bias, double eps,
                                 EpsPlacement placement = EpsPlacement::InsideSqrt);
Tensor l2_norm_composed(const Tensor& x, std::int64_t normalized_dims, const Tensor& gain,
                        const Tensor& bias, double eps);

// v: [out, ...], g: [out]; each row of v (all dims after the first) is one group.
Tensor weight_norm_composed(const Tensor& v, const Tensor& g, double eps);

Tensor batch_norm_composed(const Tensor& x, const Tensor& gain, const Tensor& bias,
                           const Tensor& running_mean, const Tensor& running_var, bool training,
                           double momentum = 0.1, double eps = 1e-5);

// How many leading values pRMSNorm uses for a group of n: ceil(n p) as in the paper, or
// floor(n p) as in the paper's code (int(d * p)); at least 1, at most n.
enum class PartialRounding { Ceil, Floor };
std::int64_t partial_count(std::int64_t n, double p, PartialRounding rounding);

}  // namespace normgrad::nn
