#pragma once
// Adam (Kingma & Ba 2015) and AdamW (decoupled weight decay, Loshchilov & Hutter 2019), with
// the update of each parameter one fused backend pass (backend.h, AdamParams):
//   m = beta1 m + (1 - beta1) g,  v = beta2 v + (1 - beta2) g^2
//   w = w - lr (m / (1 - beta1^t)) / (sqrt(v / (1 - beta2^t)) + eps)
// eps is outside the square root, as in the paper and in PyTorch; eps_inside_sqrt puts it
// inside, sqrt(v / (1 - beta2^t) + eps), as the WeightNorm paper's CIFAR-10 code (which the
// RMSNorm paper's CIFAR-10 experiment follows) has it. beta1 can change during
// training (the paper's CIFAR schedule moves it from 0.9 to 0.5 halfway).

#include <cstdint>
#include <vector>

#include "optim/optimizer.h"

namespace normgrad::optim {

struct AdamOptions {
  double lr = 1e-3;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 0.0;
  bool decoupled_weight_decay = false;  // true: AdamW
  bool eps_inside_sqrt = false;
  // Keeps the step counts and the learning rate in the parameters' device memory and works
  // out the bias corrections there, so that a CUDA graph (core/cuda.h) can record step() and
  // each replay takes the next step. The parameters must share one device; their moments and
  // counts are made at construction, so that no capture makes them. The results are those
  // of the default path, bit for bit on the CPU (where it is slower: about ten small ops a
  // parameter and step). set_lr() takes effect in replays too; beta1 and beta2 are recorded
  // as captured.
  bool capturable = false;
};

class Adam : public Optimizer {
 public:
  // The parameters must be leaves that require grad.
  Adam(std::vector<Tensor> parameters, AdamOptions options = {});

  // Parameters without a gradient are left alone, and their step count does not advance.
  void step() override;

  const AdamOptions& options() const { return options_; }
  double lr() const override { return options_.lr; }
  void set_lr(double lr) override;
  void set_beta1(double beta1);
  // "exp_avg.<i>", "exp_avg_sq.<i>", and "steps" (int64 [parameters]).
  nn::StateDict state_dict() const override;
  void load_state_dict(const nn::StateDict& state) override;
  // The optimizer's state per parameter: its step count and moment estimates (undefined
  // until its first step; capturable: zero from the start, and the count is read back from
  // the device).
  std::int64_t step_count(std::size_t index) const;
  const Tensor& exp_avg(std::size_t index) const { return exp_avg_.at(index); }
  const Tensor& exp_avg_sq(std::size_t index) const { return exp_avg_sq_.at(index); }

 private:
  std::vector<Tensor> exp_avg_, exp_avg_sq_;
  std::vector<std::int64_t> steps_;  // each parameter's step count, on the host
  AdamOptions options_;
  // capturable, in place of steps_: each parameter's step count (float64, exact to 2^53) and
  // the learning rate, on the parameters' device.
  std::vector<Tensor> device_steps_;
  Tensor device_lr_;
};

// AdamW: Adam with decoupled weight decay (default 0.01, as in PyTorch).
inline Adam AdamW(std::vector<Tensor> parameters, AdamOptions options = {.weight_decay = 0.01}) {
  options.decoupled_weight_decay = true;
  return Adam(std::move(parameters), options);
}

}  // namespace normgrad::optim
