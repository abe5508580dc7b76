#pragma once
// LayerNorm as a module (Ba, Kiros & Hinton 2016): the trailing dims of the input, given by
// normalized_shape, are normalised to zero mean and unit variance, then scaled by a gain
// (init 1) and shifted by a bias (init 0). Both are optional.
//
// With per_channel, the input is a feature map [N, C, H, W] and each (sample, channel) map is
// normalised over H x W, with one gain and bias per channel: normalized_shape is then {C}.

#include "autograd/functions/norm.h"
#include "nn/norms/affine_norm.h"

namespace normgrad::nn {

struct LayerNormOptions {
  double eps = 1e-5;
  bool gain = true;
  bool bias = true;
  bool per_channel = false;
  DType dtype = DType::Float32;
};

class LayerNorm : public AffineNorm {
 public:
  explicit LayerNorm(Shape normalized_shape, LayerNormOptions options = {});
  std::string type_name() const override { return "LayerNorm"; }
  Tensor forward(const Tensor& x) override;
  std::optional<RowNorm> row_form() const override;

 private:
  LayerNormOptions options_;
};

}  // namespace normgrad::nn
