#pragma once
// RMSNorm as a module (Zhang & Sennrich 2019): the trailing dims of the input are divided by
// their root mean square, then scaled by a gain (init 1); a bias (init 0) is optional and off
// by default, as in the paper's released code (the paper's equations include one; RMSNorm
// is not re-centering invariant either way).
//
// eps sits inside the square root by default, x / sqrt(mean(x^2) + eps); the paper's PyTorch
// code puts it outside, x / (sqrt(mean(x^2)) + eps), which `placement` selects.
//
// partial = p in (0, 1) makes it pRMSNorm: the statistic comes from the first k = ceil(n p)
// values of each group (floor(n p) with PartialRounding::Floor, as the paper's code does),
// and every value is divided by it. The paper uses p = 6.25%.
//
// per_channel: the spatial form for feature maps [N, C, H, W], as for LayerNorm.

#include "autograd/functions/norm.h"
#include "nn/norms/affine_norm.h"
#include "nn/norms/composed.h"

namespace normgrad::nn {

struct RMSNormOptions {
  double eps = 1e-5;
  EpsPlacement placement = EpsPlacement::InsideSqrt;
  bool gain = true;
  bool bias = false;
  double partial = 1.0;  // p; 1 is the full RMSNorm
  PartialRounding rounding = PartialRounding::Ceil;
  bool per_channel = false;
  DType dtype = DType::Float32;
};

class RMSNorm : public AffineNorm {
 public:
  explicit RMSNorm(Shape normalized_shape, RMSNormOptions options = {});
  std::string type_name() const override { return options_.partial < 1 ? "pRMSNorm" : "RMSNorm"; }
  Tensor forward(const Tensor& x) override;
  std::optional<RowNorm> row_form() const override;

 private:
  RMSNormOptions options_;
};

}  // namespace normgrad::nn
