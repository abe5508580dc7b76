// The batch_norm family's differentiable op: argument checks, the [N, C, S] view the kernels
// want, the running-estimate update, and the backward node that hands dy to the backward
// kernel. The formulas are the backend's contract (backends/backend.h, "batch
// normalisation"); the kernels are backends/cpu/batch_norm.cpp and backends/cuda/batch_norm.cu.

#include "autograd/functions/batch_norm.h"

#include "autograd/grad_mode.h"
#include "autograd/mixed_precision.h"
#include "autograd/ops.h"
#include "autograd/primitives.h"
#include "autograd/record.h"
#include "base/error.h"
#include "core/tensor_internal.h"

namespace normgrad {

namespace {

using autograd::Grads;
using autograd::SavedTensors;

constexpr const char* batch_norm_op = "batch_norm";

// Checks an optional per-channel operand against x and returns it contiguous. Its dtype is
// x's; a running estimate's may also be float32 for bfloat16 x (mixed precision keeps them in
// the parameters' dtype).
Tensor checked_channel_operand(const Tensor& x, const Tensor& operand, const char* what,
                               bool running_estimate = false) {
  if (!operand.defined()) return operand;
  NG_CHECK(operand.shape() == Shape{x.size(1)}, batch_norm_op, what, " must have shape [",
           x.size(1), "] (one value per channel of the input ", x.shape(), "), got ",
           operand.shape());
  if (running_estimate)
    NG_CHECK(takes_input_dtype(x.dtype(), operand.dtype()), batch_norm_op, what, " is ",
             operand.dtype(), " but the input is ", x.dtype());
  else
    autograd::primitive::check_same_dtype(x, operand, batch_norm_op);
  autograd::primitive::check_same_device(x, operand, batch_norm_op);
  return operand.contiguous();
}

// running = (1 - momentum) running + momentum * weight * batch, in place, outside autograd.
void update_running(const Tensor& running, const Tensor& batch, double momentum, double weight) {
  NoGradGuard no_grad;
  Tensor target = running;
  target.mul_(1 - momentum).add_(batch, momentum * weight);
}

}  // namespace

Tensor batch_norm(const Tensor& x, const Tensor& gain_in, const Tensor& bias_in,
                  const Tensor& running_mean, const Tensor& running_var, bool training,
                  double momentum, double eps) {
  autograd::primitive::check_floating(x, batch_norm_op);
  NG_CHECK(x.dim() >= 2, batch_norm_op, "expects an input [N, C, ...], got ", x.shape());
  NG_CHECK(running_mean.defined() == running_var.defined(), batch_norm_op,
           "running_mean and running_var go together: give both or neither");
  NG_CHECK(momentum >= 0 && momentum <= 1, batch_norm_op, "momentum must lie in [0, 1], got ",
           momentum);
  NG_CHECK(eps >= 0, batch_norm_op, "eps must be non-negative, got ", eps);
  const std::int64_t batch = x.size(0), channels = x.size(1);
  std::int64_t spatial = 1;
  for (std::int64_t d = 2; d < x.dim(); ++d) spatial *= x.size(d);
  const std::int64_t count = batch * spatial;  // values per channel
  NG_CHECK(!training || count > 1, batch_norm_op,
           "expected more than one value per channel when training, got input of shape ",
           x.shape());
  NG_CHECK(training || running_mean.defined(), batch_norm_op,
           "evaluation normalises with the running estimates: give running_mean and "
           "running_var, or use batch statistics (training = true)");
  const Tensor gain = checked_channel_operand(x, gain_in, "gain");
  const Tensor bias = checked_channel_operand(x, bias_in, "bias");
  checked_channel_operand(x, running_mean, "running_mean", true);
  checked_channel_operand(x, running_var, "running_var", true);

  const Shape kernel_shape{batch, channels, spatial};
  const Tensor input = x.contiguous().detach().view(kernel_shape);
  backend::Backend& device = detail::backend_of(x);
  Tensor y = detail::make_tensor(x.shape(), x.dtype(), x.device());
  // The statistics are float64 whatever x's dtype (backend.h).
  const auto statistic = [&] {
    return detail::make_tensor({channels}, DType::Float64, x.device());
  };
  Tensor mean = statistic(), rstd;
  if (training) {
    rstd = statistic();
    const Tensor variance = statistic();
    device.batch_norm_statistics(detail::ref(mean), detail::ref(variance), detail::ref(rstd),
                                 detail::ref(input), eps);
    if (running_mean.defined()) {
      const double values = static_cast<double>(count);
      update_running(running_mean, mean.to(running_mean.dtype()), momentum, 1.0);
      update_running(running_var, variance.to(running_var.dtype()), momentum,
                     values / (values - 1));
    }
  } else {
    // Copies: a later training step updates the running estimates in place, and backward
    // must see the values this forward used.
    NoGradGuard no_grad;
    detail::copy_values(mean, running_mean.detach());
    rstd = rsqrt(running_var.detach().to(DType::Float64) + eps);
  }
  backend::TensorRef gain_ref, bias_ref;
  device.batch_norm_forward(detail::ref(y.detach().view(kernel_shape)), detail::ref(input),
                            detail::ref(mean), detail::ref(rstd),
                            detail::optional_ref(gain, gain_ref),
                            detail::optional_ref(bias, bias_ref));

  if (autograd::needs_grad(x, gain_in, bias_in))
    autograd::record(
        training ? "BatchNormBackward" : "BatchNormEvalBackward", y, {x, gain_in, bias_in},
        {input, mean, rstd, gain},
        [training, kernel_shape, shape = x.shape(), want_gain = gain_in.requires_grad(),
         want_bias = bias_in.requires_grad()](const Tensor& dy, const SavedTensors& s) {
          const Shape channel_shape{kernel_shape[1]};
          Grads grads(3);
          grads[0] = detail::make_tensor(shape, dy.dtype(), dy.device());
          if (want_gain) grads[1] = detail::make_tensor(channel_shape, dy.dtype(), dy.device());
          if (want_bias) grads[2] = detail::make_tensor(channel_shape, dy.dtype(), dy.device());
          backend::TensorRef dgain_ref, dbias_ref, saved_gain_ref;
          detail::backend_of(dy).batch_norm_backward(
              detail::ref(grads[0].view(kernel_shape)), detail::optional_ref(grads[1], dgain_ref),
              detail::optional_ref(grads[2], dbias_ref),
              detail::ref(dy.contiguous().view(kernel_shape)), detail::ref(s[0]), detail::ref(s[1]),
              detail::ref(s[2]), detail::optional_ref(s[3], saved_gain_ref), training);
          return grads;
        });
  return y;
}

}  // namespace normgrad
