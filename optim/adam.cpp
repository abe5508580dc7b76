#include "optim/adam.h"

#include <cmath>
#include <utility>

#include "autograd/grad_mode.h"
#include "core/error.h"
#include "core/tensor_internal.h"

namespace normgrad::optim {

namespace {

void check_options(const AdamOptions& options) {
  NG_CHECK(options.lr >= 0, "Adam", "learning rate must be non-negative, got ", options.lr);
  NG_CHECK(options.beta1 >= 0 && options.beta1 < 1, "Adam", "beta1 must lie in [0, 1), got ",
           options.beta1);
  NG_CHECK(options.beta2 >= 0 && options.beta2 < 1, "Adam", "beta2 must lie in [0, 1), got ",
           options.beta2);
  NG_CHECK(options.eps > 0, "Adam", "eps must be positive, got ", options.eps);
  NG_CHECK(options.weight_decay >= 0, "Adam", "weight decay must be non-negative, got ",
           options.weight_decay);
}

}  // namespace

Adam::Adam(std::vector<Tensor> parameters, AdamOptions options)
    : parameters_(std::move(parameters)),
      exp_avg_(parameters_.size()),
      exp_avg_sq_(parameters_.size()),
      steps_(parameters_.size(), 0),
      options_(options) {
  check_options(options_);
  for (std::size_t i = 0; i < parameters_.size(); ++i) {
    const Tensor& parameter = parameters_[i];
    NG_CHECK(parameter.defined() && parameter.is_leaf() && parameter.requires_grad(), "Adam",
             "parameter ", i, " must be a leaf tensor that requires grad");
    NG_CHECK(is_floating(parameter.dtype()), "Adam", "parameter ", i,
             " must be floating-point, got ", parameter.dtype());
  }
}

void Adam::zero_grad() {
  for (Tensor& parameter : parameters_) parameter.zero_grad();
}

void Adam::set_lr(double lr) {
  NG_CHECK(lr >= 0, "Adam", "learning rate must be non-negative, got ", lr);
  options_.lr = lr;
}

void Adam::set_beta1(double beta1) {
  NG_CHECK(beta1 >= 0 && beta1 < 1, "Adam", "beta1 must lie in [0, 1), got ", beta1);
  options_.beta1 = beta1;
}

void Adam::step() {
  NoGradGuard no_grad;
  for (std::size_t i = 0; i < parameters_.size(); ++i) {
    Tensor& parameter = parameters_[i];
    const Tensor grad = parameter.grad();
    if (!grad.defined()) continue;
    NG_CHECK(parameter.is_contiguous(), "Adam", "parameter ", i,
             " must be contiguous for the fused update, got strides ", parameter.strides());
    if (!exp_avg_[i].defined()) {
      exp_avg_[i] =
          zeros(parameter.shape(), {.dtype = parameter.dtype(), .device = parameter.device()});
      exp_avg_sq_[i] =
          zeros(parameter.shape(), {.dtype = parameter.dtype(), .device = parameter.device()});
    }
    const std::int64_t t = ++steps_[i];
    backend::AdamParams params{
        .lr = options_.lr,
        .beta1 = options_.beta1,
        .beta2 = options_.beta2,
        .eps = options_.eps,
        .weight_decay = options_.weight_decay,
        .decoupled = options_.decoupled_weight_decay,
        .bias_correction1 = 1 - std::pow(options_.beta1, static_cast<double>(t)),
        .bias_correction2 = 1 - std::pow(options_.beta2, static_cast<double>(t)),
    };
    const Tensor contiguous_grad = grad.contiguous();
    detail::backend_of(parameter).adam_update(
        params, detail::ref(parameter), detail::ref(contiguous_grad), detail::ref(exp_avg_[i]),
        detail::ref(exp_avg_sq_[i]));
    parameter.storage()->bump_version();  // the update is in place, like add_()
  }
}

}  // namespace normgrad::optim
