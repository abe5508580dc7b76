#include "optim/adam.h"

#include <cmath>
#include <utility>

#include "autograd/grad_mode.h"
#include "core/error.h"
#include "core/tensor_internal.h"

namespace normgrad::optim {

namespace {

// The largest step counter a loaded state may hold (see load_state_dict).
constexpr std::int64_t max_steps = std::int64_t{1} << 53;

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
    : Optimizer(std::move(parameters), "Adam"),
      exp_avg_(parameters_.size()),
      exp_avg_sq_(parameters_.size()),
      steps_(parameters_.size(), 0),
      options_(options) {
  check_options(options_);
}

void Adam::set_lr(double lr) {
  NG_CHECK(lr >= 0, "Adam", "learning rate must be non-negative, got ", lr);
  options_.lr = lr;
}

void Adam::set_beta1(double beta1) {
  NG_CHECK(beta1 >= 0 && beta1 < 1, "Adam", "beta1 must lie in [0, 1), got ", beta1);
  options_.beta1 = beta1;
}

nn::StateDict Adam::state_dict() const {
  nn::StateDict state;
  for (std::size_t i = 0; i < parameters_.size(); ++i) {
    if (!exp_avg_[i].defined()) continue;
    state["exp_avg." + std::to_string(i)] = exp_avg_[i].clone();
    state["exp_avg_sq." + std::to_string(i)] = exp_avg_sq_[i].clone();
  }
  state["steps"] = from_vector(steps_, {static_cast<std::int64_t>(steps_.size())});
  return state;
}

void Adam::load_state_dict(const nn::StateDict& state) {
  const auto steps = state.find("steps");
  NG_CHECK(steps != state.end(), "Adam", "the state has no \"steps\" entry");
  NG_CHECK(steps->second.dtype() == DType::Int64 &&
               steps->second.shape() == Shape{static_cast<std::int64_t>(parameters_.size())},
           "Adam", "\"steps\" must be int64 [", parameters_.size(), "], got ",
           steps->second.dtype(), " ", steps->second.shape());
  // A step counter is a count of updates: never negative, and exact in the double that the bias
  // correction raises beta to, which also keeps ++steps far from int64 overflow.
  const std::vector<std::int64_t> counts = steps->second.to_vector<std::int64_t>();
  for (std::size_t i = 0; i < counts.size(); ++i)
    NG_CHECK(counts[i] >= 0 && counts[i] <= max_steps, "Adam", "\"steps\" of parameter ", i,
             " is ", counts[i], ", outside [0, 2^53]: the state is corrupted");
  nn::StateDict moments = state;
  moments.erase("steps");
  std::vector<Tensor> exp_avg(parameters_.size()), exp_avg_sq(parameters_.size());
  detail::load_slots(moments, parameters_, {"exp_avg", "exp_avg_sq"}, {&exp_avg, &exp_avg_sq},
                     "Adam");
  for (std::size_t i = 0; i < parameters_.size(); ++i)
    NG_CHECK(exp_avg[i].defined() == exp_avg_sq[i].defined(), "Adam", "parameter ", i,
             " has only one of exp_avg and exp_avg_sq");
  exp_avg_ = std::move(exp_avg);
  exp_avg_sq_ = std::move(exp_avg_sq);
  steps_ = counts;
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
        .eps_inside_sqrt = options_.eps_inside_sqrt,
        .bias_correction1 = 1 - std::pow(options_.beta1, static_cast<double>(t)),
        .bias_correction2 = 1 - std::pow(options_.beta2, static_cast<double>(t)),
    };
    const Tensor contiguous_grad = grad.contiguous();
    normgrad::detail::backend_of(parameter).adam_update(
        params, normgrad::detail::ref(parameter), normgrad::detail::ref(contiguous_grad),
        normgrad::detail::ref(exp_avg_[i]), normgrad::detail::ref(exp_avg_sq_[i]));
    parameter.storage()->bump_version();  // the update is in place, like add_()
  }
}

}  // namespace normgrad::optim
