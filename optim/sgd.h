#pragma once
// Stochastic gradient descent with optional momentum (plain or Nesterov) and weight decay:
//   g = grad + weight_decay * w
//   v = momentum * v + g          (v starts at g)
//   w = w - lr * v                (v = g when momentum is 0)
//   w = w - lr * (g + momentum * v)   with Nesterov momentum, as PyTorch writes it

#include <vector>

#include "optim/optimizer.h"

namespace normgrad::optim {

struct SGDOptions {
  double lr = 0.01;
  double momentum = 0.0;
  double weight_decay = 0.0;
  bool nesterov = false;  // needs momentum > 0
};

class SGD : public Optimizer {
 public:
  // The parameters must be leaves that require grad.
  SGD(std::vector<Tensor> parameters, SGDOptions options);

  void step() override;  // parameters without a gradient are left alone

  const SGDOptions& options() const { return options_; }
  double lr() const override { return options_.lr; }
  void set_lr(double lr) override;
  nn::StateDict state_dict() const override;  // "velocity.<i>"
  void load_state_dict(const nn::StateDict& state) override;

 private:
  std::vector<Tensor> velocity_;  // one per parameter, created on its first step
  SGDOptions options_;
};

}  // namespace normgrad::optim
