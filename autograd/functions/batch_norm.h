#pragma once
// The batch_norm family's differentiable op: one fused backend kernel for the statistics, one
// forward, one backward (backends/backend.h gives the formulas). Its composed twin is
// nn/norms/composed.h's batch_norm_composed; the module is nn/norms/batch_norm.h.

#include "core/tensor.h"

namespace normgrad {

// BatchNorm (Ioffe & Szegedy 2015). x is [N, C, ...]; channel c is normalised over its
// M = N S values, S the product of the spatial dims (1 for [N, C]), with the fused kernels of
// backends/cpu/batch_norm.cpp. gain and bias ([C]) are optional, and so are running_mean and
// running_var ([C], both or neither).
//   training:   y = g (x - mean) / sqrt(var + eps) + b, with the batch's mean and biased
//               variance (both functions of x for backward). The running estimates, when
//               given, are updated in place outside autograd:
//                 running_mean = (1 - momentum) running_mean + momentum mean
//                 running_var  = (1 - momentum) running_var  + momentum var M / (M - 1)
//               (the unbiased variance, as PyTorch does). momentum is the weight of the new
//               batch, PyTorch's convention; the "momentum 0.9" of the paper's Lasagne CIFAR
//               code (paper, Appendix A.4) is the weight kept by the old average: the same 0.1.
//               That code corrects the variance by N / (N - 1), N the batch size, even for
//               feature maps; M / (M - 1) counts every value that entered the mean, as
//               PyTorch does. Training needs M > 1.
//   evaluation: the running estimates take the batch's place; y is an affine map of x.
Tensor batch_norm(const Tensor& x, const Tensor& gain, const Tensor& bias,
                  const Tensor& running_mean, const Tensor& running_var, bool training,
                  double momentum = 0.1, double eps = 1e-5);

}  // namespace normgrad
