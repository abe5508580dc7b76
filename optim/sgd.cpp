#include "optim/sgd.h"

#include "autograd/grad_mode.h"
#include "autograd/ops.h"
#include "base/error.h"

namespace normgrad::optim {

SGD::SGD(std::vector<Tensor> parameters, SGDOptions options)
    : Optimizer(std::move(parameters), "SGD"), velocity_(parameters_.size()), options_(options) {
  NG_CHECK(options.lr >= 0, "SGD", "learning rate must be non-negative, got ", options.lr);
  NG_CHECK(options.momentum >= 0, "SGD", "momentum must be non-negative, got ", options.momentum);
  NG_CHECK(options.weight_decay >= 0, "SGD", "weight decay must be non-negative, got ",
           options.weight_decay);
  NG_CHECK(!options.nesterov || options.momentum > 0, "SGD",
           "Nesterov momentum needs momentum > 0, got ", options.momentum);
}

void SGD::set_lr(double lr) {
  NG_CHECK(lr >= 0, "SGD", "learning rate must be non-negative, got ", lr);
  options_.lr = lr;
}

nn::StateDict SGD::state_dict() const {
  nn::StateDict state;
  for (std::size_t i = 0; i < velocity_.size(); ++i)
    if (velocity_[i].defined()) state["velocity." + std::to_string(i)] = velocity_[i].clone();
  return state;
}

void SGD::load_state_dict(const nn::StateDict& state) {
  detail::load_slots(state, parameters_, {"velocity"}, {&velocity_}, "SGD");
}

void SGD::step() {
  NoGradGuard no_grad;
  for (std::size_t i = 0; i < parameters_.size(); ++i) {
    Tensor& parameter = parameters_[i];
    Tensor grad = parameter.grad();
    if (!grad.defined()) continue;
    if (options_.weight_decay != 0) grad = grad + parameter * options_.weight_decay;
    if (options_.momentum != 0) {
      if (!velocity_[i].defined())
        velocity_[i] = grad.clone();
      else
        velocity_[i].mul_(options_.momentum).add_(grad);
      grad = options_.nesterov ? grad + velocity_[i] * options_.momentum : velocity_[i];
    }
    parameter.add_(grad, -options_.lr);
  }
}

}  // namespace normgrad::optim
