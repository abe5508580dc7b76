#pragma once
// The elementwise nonlinearities as layers, for Sequential. Each forwards to the
// differentiable op of the same name (autograd/ops.h).

#include "autograd/ops.h"
#include "nn/layer.h"

namespace normgrad::nn {

class ReLU : public Layer {
 public:
  std::string type_name() const override { return "ReLU"; }
  Tensor forward(const Tensor& x) override { return relu(x); }
};

class LeakyReLU : public Layer {
 public:
  // The paper's CIFAR model uses a slope of 0.1.
  explicit LeakyReLU(double negative_slope = 0.01) : negative_slope_(negative_slope) {}
  std::string type_name() const override { return "LeakyReLU"; }
  Tensor forward(const Tensor& x) override { return leaky_relu(x, negative_slope_); }

 private:
  double negative_slope_;
};

class Tanh : public Layer {
 public:
  std::string type_name() const override { return "Tanh"; }
  Tensor forward(const Tensor& x) override { return tanh(x); }
};

class Sigmoid : public Layer {
 public:
  std::string type_name() const override { return "Sigmoid"; }
  Tensor forward(const Tensor& x) override { return sigmoid(x); }
};

class GELU : public Layer {
 public:
  std::string type_name() const override { return "GELU"; }
  Tensor forward(const Tensor& x) override { return gelu(x); }  // exact: x Phi(x)
};

}  // namespace normgrad::nn
