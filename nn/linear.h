#pragma once
// Linear: y = x W^T + b, with W of shape [out_features, in_features] as in PyTorch.
//
// Initialised as PyTorch's default: W and b uniform on [-1/sqrt(in), 1/sqrt(in)] (Kaiming
// uniform with a = sqrt(5), which comes to that bound). A model that wants another
// initialiser applies it from init.h.

#include <cstdint>

#include "nn/layer.h"

namespace normgrad::nn {

struct LinearOptions {
  bool bias = true;
  DType dtype = DType::Float32;
};

class Linear : public Layer {
 public:
  Tensor weight;  // [out, in]
  Tensor bias;    // [out]; undefined without bias

  Linear(std::int64_t in_features, std::int64_t out_features, LinearOptions options = {});
  std::string type_name() const override { return "Linear"; }
  Tensor forward(const Tensor& x) override;  // x: [..., in] -> [..., out]
};

}  // namespace normgrad::nn
