#pragma once
// Optimizer: what SGD and Adam share — the parameters they update, zero_grad(), step(), the
// learning rate, and their state (momenta, moment estimates, step counts) as named tensors,
// so that a checkpoint can save it and a resumed run continue exactly where it stopped.

#include <string>
#include <vector>

#include "core/tensor.h"
#include "nn/module.h"

namespace normgrad::optim {

class Optimizer {
 public:
  virtual ~Optimizer() = default;
  virtual void step() = 0;
  void zero_grad();  // drops every parameter's gradient
  virtual double lr() const = 0;
  virtual void set_lr(double lr) = 0;

  // The state as named tensors, "<what>.<parameter index>": state not yet created (before a
  // parameter's first step) is left out.
  virtual nn::StateDict state_dict() const = 0;
  // Restores a state_dict() of an optimizer of the same kind over parameters of the same
  // shapes. Checks every entry before it changes anything.
  virtual void load_state_dict(const nn::StateDict& state) = 0;

  const std::vector<Tensor>& parameters() const { return parameters_; }

 protected:
  // Checks that each parameter is a floating-point leaf that requires grad.
  Optimizer(std::vector<Tensor> parameters, const char* name);
  std::vector<Tensor> parameters_;
};

namespace detail {
// Restores `slots[i]` from "<prefix>.<i>" entries of `state`, with the parameters' shapes and
// dtypes; entries missing from state leave a slot undefined. Unknown names are refused.
void load_slots(const nn::StateDict& state, const std::vector<Tensor>& parameters,
                const std::vector<std::string>& prefixes, std::vector<std::vector<Tensor>*> slots,
                const char* name);
}  // namespace detail

}  // namespace normgrad::optim
