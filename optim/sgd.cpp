#include "optim/sgd.h"

#include "autograd/grad_mode.h"
#include "autograd/ops.h"
#include "core/error.h"

namespace normgrad::optim {

SGD::SGD(std::vector<Tensor> parameters, SGDOptions options)
    : parameters_(std::move(parameters)), velocity_(parameters_.size()), options_(options) {
  NG_CHECK(options.lr >= 0, "SGD", "learning rate must be non-negative, got ", options.lr);
  NG_CHECK(options.momentum >= 0, "SGD", "momentum must be non-negative, got ", options.momentum);
  NG_CHECK(options.weight_decay >= 0, "SGD", "weight decay must be non-negative, got ",
           options.weight_decay);
  NG_CHECK(!options.nesterov || options.momentum > 0, "SGD",
           "Nesterov momentum needs momentum > 0, got ", options.momentum);
  for (std::size_t i = 0; i < parameters_.size(); ++i) {
    const Tensor& parameter = parameters_[i];
    NG_CHECK(parameter.defined() && parameter.is_leaf() && parameter.requires_grad(), "SGD",
             "parameter ", i, " must be a leaf tensor that requires grad");
  }
}

void SGD::zero_grad() {
  for (Tensor& parameter : parameters_) parameter.zero_grad();
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
