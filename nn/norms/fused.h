#pragma once
// The fused normalisers: one backend kernel forward, one backward (backends/backend.h,
// norm_forward / norm_backward). Same formulas and options as their composed twins in
// composed.h, which the tests hold them to.
//
// The trailing `normalized_dims` dims of x form one group. gain and bias (each optional:
// pass an undefined Tensor) have the shape of those trailing dims — or, in the spatial form
// (`per_channel`), x is [N, C, H, W], the groups are the H x W maps of each (sample,
// channel), and gain and bias have shape [C].
//
// batch_norm is the other kind: statistics per channel over the batch (below).

#include <cstdint>

#include "core/tensor.h"
#include "nn/norms/composed.h"

namespace normgrad::nn {

struct NormOptions {
  double eps = 1e-5;
  EpsPlacement placement = EpsPlacement::InsideSqrt;  // the RMS family only
  bool per_channel = false;                            // the spatial form of a CNN
};

// A row normaliser over the last dim in the form a kernel that fuses it with the ops around it
// takes (a GRU step's: recurrent_functional.h): its statistic, the leading values that give it,
// its options and its gain and bias. A LayerNorm, RMSNorm, pRMSNorm or L2Norm module gives its
// own through Norm::row_form.
enum class RowStatistic {
  Variance,      // LayerNorm: the variance of all n values
  MeanSquare,    // RMSNorm (k = n), pRMSNorm (k < n): the sum of the first k squares over k
  SumOfSquares,  // L2Norm: the sum of all n squares
};

struct RowNorm {
  RowStatistic statistic = RowStatistic::MeanSquare;
  std::int64_t k = 0;        // MeanSquare: the leading values that give it; 0 for all
  NormOptions options = {};  // never per channel
  Tensor gain = {};          // [n], or undefined
  Tensor bias = {};          // [n], or undefined
};

// The norm over the last dim of x: layer_norm, rms_norm, partial_rms_norm or l2_norm.
Tensor row_norm(const Tensor& x, const RowNorm& norm);

Tensor layer_norm(const Tensor& x, std::int64_t normalized_dims, const Tensor& gain,
                  const Tensor& bias, NormOptions options = {});
Tensor rms_norm(const Tensor& x, std::int64_t normalized_dims, const Tensor& gain,
                const Tensor& bias, NormOptions options = {});
// The statistic comes from the first k values of each (flattened) group.
Tensor partial_rms_norm(const Tensor& x, std::int64_t normalized_dims, std::int64_t k,
                        const Tensor& gain, const Tensor& bias, NormOptions options = {});
Tensor l2_norm(const Tensor& x, std::int64_t normalized_dims, const Tensor& gain,
               const Tensor& bias, NormOptions options = {});

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

}  // namespace normgrad::nn
