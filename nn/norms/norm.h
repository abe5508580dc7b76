#pragma once
// Norm: the interface every activation normaliser offers — LayerNorm, RMSNorm, pRMSNorm,
// L2Norm, BatchNorm and Identity (the "none" choice) — so that a layer can hold whichever one
// its NormSpec names (factory.h) and call it without knowing which it is.

#include "nn/layer.h"

namespace normgrad::nn {

// A Layer that normalises; what make_norm returns.
class Norm : public Layer {};

// The "none" choice: passes its input through unchanged, with no parameters.
class Identity : public Norm {
 public:
  std::string type_name() const override { return "Identity"; }
  Tensor forward(const Tensor& x) override { return x; }
};

}  // namespace normgrad::nn
