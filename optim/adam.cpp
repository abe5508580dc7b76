#include "optim/adam.h"

#include <cmath>
#include <utility>

#include "autograd/grad_mode.h"
#include "autograd/ops.h"
#include "base/error.h"
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

// The capturable path's scalars for one parameter's step, on its device: the count goes up
// by one, and [lr, lr / (1 - beta1^t), 1 / sqrt(1 - beta2^t), 1 / (1 - beta2^t)] follows from
// it in float64, by the operations the default path does on the host (std::pow, a correctly
// rounded sqrt and divisions), so the CPU gives the same bits.
Tensor capturable_scalars(Tensor& count, const Tensor& lr, double beta1, double beta2) {
  count.add_(1.0);
  const TensorOptions on{.dtype = DType::Float64, .device = count.device()};
  const Tensor correction1 = rsub(pow(scalar_tensor(beta1, on), count), 1.0);
  const Tensor correction2 = rsub(pow(scalar_tensor(beta2, on), count), 1.0);
  return stack({lr, lr / correction1, rdiv(sqrt(correction2), 1.0), rdiv(correction2, 1.0)});
}

}  // namespace

Adam::Adam(std::vector<Tensor> parameters, AdamOptions options)
    : Optimizer(std::move(parameters), "Adam"),
      exp_avg_(parameters_.size()),
      exp_avg_sq_(parameters_.size()),
      options_(options) {
  check_options(options_);
  if (!options_.capturable) {
    steps_.assign(parameters_.size(), 0);
    return;
  }
  if (parameters_.empty()) return;
  const Device device = parameters_.front().device();
  for (std::size_t i = 0; i < parameters_.size(); ++i) {
    const Tensor& parameter = parameters_[i];
    NG_CHECK(parameter.device() == device, "Adam",
             "capturable: the parameters must share a device; "
             "parameter 0 is on ",
             device, " and parameter ", i, " on ", parameter.device());
    const TensorOptions like{.dtype = parameter.dtype(), .device = device};
    exp_avg_[i] = zeros(parameter.shape(), like);
    exp_avg_sq_[i] = zeros(parameter.shape(), like);
    device_steps_.push_back(zeros({}, {.dtype = DType::Float64, .device = device}));
  }
  device_lr_ = scalar_tensor(options_.lr, {.dtype = DType::Float64, .device = device});
}

void Adam::set_lr(double lr) {
  NG_CHECK(lr >= 0, "Adam", "learning rate must be non-negative, got ", lr);
  options_.lr = lr;
  if (device_lr_.defined()) device_lr_.fill_(lr);
}

std::int64_t Adam::step_count(std::size_t index) const {
  if (options_.capturable) return static_cast<std::int64_t>(device_steps_.at(index).item());
  return steps_.at(index);
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
  std::vector<std::int64_t> counts(parameters_.size());
  for (std::size_t i = 0; i < counts.size(); ++i) counts[i] = step_count(i);
  state["steps"] = from_vector(counts, {static_cast<std::int64_t>(counts.size())});
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
  if (options_.capturable) {  // the tensors a graph may have recorded keep their memory
    for (std::size_t i = 0; i < parameters_.size(); ++i) {
      if (exp_avg[i].defined()) {
        exp_avg_[i].copy_(exp_avg[i]);
        exp_avg_sq_[i].copy_(exp_avg_sq[i]);
      } else {  // never stepped in the saved state
        exp_avg_[i].fill_(0.0);
        exp_avg_sq_[i].fill_(0.0);
      }
      device_steps_[i].fill_(static_cast<double>(counts[i]));
    }
  } else {
    exp_avg_ = std::move(exp_avg);
    exp_avg_sq_ = std::move(exp_avg_sq);
    steps_ = counts;
  }
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
    backend::AdamParams params{
        .lr = options_.lr,
        .beta1 = options_.beta1,
        .beta2 = options_.beta2,
        .eps = options_.eps,
        .weight_decay = options_.weight_decay,
        .decoupled = options_.decoupled_weight_decay,
        .eps_inside_sqrt = options_.eps_inside_sqrt,
    };
    Tensor scalars;
    if (options_.capturable) {
      scalars = capturable_scalars(device_steps_[i], device_lr_, options_.beta1, options_.beta2);
      params.scalars = static_cast<const double*>(normgrad::detail::ref(scalars).data);
    } else {
      const auto t = static_cast<double>(++steps_[i]);
      params.bias_correction1 = 1 - std::pow(options_.beta1, t);
      params.bias_correction2 = 1 - std::pow(options_.beta2, t);
    }
    const Tensor contiguous_grad = grad.contiguous();
    normgrad::detail::backend_of(parameter).adam_update(
        params, normgrad::detail::ref(parameter), normgrad::detail::ref(contiguous_grad),
        normgrad::detail::ref(exp_avg_[i]), normgrad::detail::ref(exp_avg_sq_[i]));
    parameter.storage()->bump_version();  // the update is in place, like add_()
  }
}

}  // namespace normgrad::optim
