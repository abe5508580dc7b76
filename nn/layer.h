#pragma once
// Layer: a module with one input and one output, the kind Sequential chains. Linear,
// Conv2d, the activations, Dropout and every normaliser (nn::Norm) are layers.

#include "nn/module.h"

namespace normgrad::nn {

class Layer : public Module {
 public:
  // Not const: some layers keep state that a forward pass updates (BatchNorm's running
  // statistics) or draw random numbers (Dropout).
  virtual Tensor forward(const Tensor& x) = 0;
  Tensor operator()(const Tensor& x) { return forward(x); }
};

}  // namespace normgrad::nn
