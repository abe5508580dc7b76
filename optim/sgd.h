#pragma once
// Stochastic gradient descent with optional momentum (plain or Nesterov) and weight decay:
//   g = grad + weight_decay * w
//   v = momentum * v + g          (v starts at g)
//   w = w - lr * v                (v = g when momentum is 0)
//   w = w - lr * (g + momentum * v)   with Nesterov momentum, as PyTorch writes it

#include <vector>

#include "core/tensor.h"

namespace normgrad::optim {

struct SGDOptions {
  double lr = 0.01;
  double momentum = 0.0;
  double weight_decay = 0.0;
  bool nesterov = false;  // needs momentum > 0
};

class SGD {
 public:
  // The parameters must be leaves that require grad.
  SGD(std::vector<Tensor> parameters, SGDOptions options);

  void zero_grad();  // drops every parameter's gradient
  void step();       // parameters without a gradient are left alone

  const SGDOptions& options() const { return options_; }
  void set_lr(double lr) { options_.lr = lr; }

 private:
  std::vector<Tensor> parameters_;
  std::vector<Tensor> velocity_;  // one per parameter, created on its first step
  SGDOptions options_;
};

}  // namespace normgrad::optim
