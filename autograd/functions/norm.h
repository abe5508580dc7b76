#pragma once
// The norm family's differentiable ops: LayerNorm, RMSNorm, pRMSNorm and L2Norm over groups of
// trailing values, each one fused backend kernel forward and one backward (the backend's
// norm_forward and norm_backward; backends/backend.h gives the formulas and the backward's
// derivation). Same formulas and options as their composed twins (nn/norms/composed.h), which
// the tests hold them to. The modules (nn/norms/) call these.
//
// The trailing `normalized_dims` dims of x form one group. gain and bias (each optional:
// pass an undefined Tensor) have the shape of those trailing dims — or, in the spatial form
// (`per_channel`), x is [N, C, H, W], the groups are the H x W maps of each (sample,
// channel), and gain and bias have shape [C].
//
// batch_norm is the other kind: statistics per channel over the batch (batch_norm.h).

#include <cstdint>

#include "backends/backend.h"
#include "core/tensor.h"

namespace normgrad {

// Where a RMS-family norm adds eps: inside the square root (the default) or outside it, as the
// paper's PyTorch code does.
enum class EpsPlacement { InsideSqrt, OutsideSqrt };

struct NormOptions {
  double eps = 1e-5;
  EpsPlacement placement = EpsPlacement::InsideSqrt;  // the RMS family only
  bool per_channel = false;                            // the spatial form of a CNN
};

// A row normaliser over the last dim in the form a kernel that fuses it with the ops around it
// takes (a GRU step's: recurrent.h): its statistic, the leading values that give it,
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

// The backend's NormParams of a row norm over rows of n values, for the ops that fuse a row
// norm with the work around it (the normed GRU and LSTM steps). k: the leading values that give
// a MeanSquare statistic (0: all n).
backend::NormParams kernel_params(RowStatistic statistic, std::int64_t k, std::int64_t n,
                                  const NormOptions& options);

}  // namespace normgrad
