#include "optim/clip.h"

#include <algorithm>
#include <cmath>

#include "autograd/grad_mode.h"
#include "autograd/ops.h"
#include "base/error.h"

namespace normgrad::optim {

namespace {

// Each gradient's sum of squares in its own dtype (the backend's sums are blocked and pairwise,
// accurate to a few ulps without a float64 copy of every gradient), added up in float64 on the
// first gradient's device; undefined when no parameter has a gradient.
Tensor gradients_sum_of_squares(const std::vector<Tensor>& parameters) {
  Tensor sum_of_squares;
  for (const Tensor& parameter : parameters) {
    const Tensor grad = parameter.defined() ? parameter.grad() : Tensor();
    if (!grad.defined()) continue;
    const Tensor sum = square(grad).sum().to(DType::Float64);
    sum_of_squares =
        sum_of_squares.defined() ? sum_of_squares + sum.to(sum_of_squares.device()) : sum;
  }
  return sum_of_squares;
}

}  // namespace

double clip_grad_norm(const std::vector<Tensor>& parameters, double max_norm) {
  NG_CHECK(max_norm > 0, "clip_grad_norm", "max_norm must be positive, got ", max_norm);
  NoGradGuard no_grad;
  // Read back once: on a GPU, one wait a step.
  const Tensor sum_of_squares = gradients_sum_of_squares(parameters);
  const double norm = sum_of_squares.defined() ? std::sqrt(sum_of_squares.item()) : 0.0;
  NG_CHECK(std::isfinite(norm), "clip_grad_norm", "the gradients' norm is not finite (", norm,
           "): a NaN or infinity reached a gradient");
  if (norm > max_norm) {
    // The 1e-6 keeps the clipped norm just under max_norm, as PyTorch does (see clip.h for
    // the norms within 1e-6 of max_norm).
    const double scale = max_norm / (norm + 1e-6);
    for (const Tensor& parameter : parameters) {
      Tensor grad = parameter.defined() ? parameter.grad() : Tensor();
      if (grad.defined()) grad.mul_(scale);
    }
  }
  return norm;
}

Tensor clip_grad_norm_on_device(const std::vector<Tensor>& parameters, double max_norm) {
  NG_CHECK(max_norm > 0, "clip_grad_norm_on_device", "max_norm must be positive, got ", max_norm);
  NoGradGuard no_grad;
  const Tensor sum_of_squares = gradients_sum_of_squares(parameters);
  if (!sum_of_squares.defined()) return scalar_tensor(0.0, {.dtype = DType::Float64});
  // sqrt and the division are correctly rounded in float64 on either side, so the norm and the
  // factor are clip_grad_norm's bit for bit, and so is each gradient's product with the factor
  // rounded to its dtype (x * 1 is x).
  const Tensor norm = sqrt(sum_of_squares);
  const TensorOptions on_norm{.dtype = DType::Float64, .device = norm.device()};
  const Tensor factor =
      where(gt(norm, max_norm), rdiv(norm + 1e-6, max_norm), scalar_tensor(1.0, on_norm));
  for (const Tensor& parameter : parameters) {
    Tensor grad = parameter.defined() ? parameter.grad() : Tensor();
    if (grad.defined()) grad.mul_(factor.to(grad.device()).to(grad.dtype()));
  }
  return norm;
}

double clip_grad_norm_each(const std::vector<Tensor>& parameters, double max_norm) {
  NG_CHECK(max_norm > 0, "clip_grad_norm_each", "max_norm must be positive, got ", max_norm);
  NoGradGuard no_grad;
  std::vector<double> norms(parameters.size(), 0.0);
  double largest = 0;
  for (std::size_t i = 0; i < parameters.size(); ++i) {
    const Tensor grad = parameters[i].defined() ? parameters[i].grad() : Tensor();
    if (!grad.defined()) continue;
    norms[i] = std::sqrt(square(grad).sum().item());
    NG_CHECK(std::isfinite(norms[i]), "clip_grad_norm_each", "the norm of gradient ", i, " of ",
             parameters.size(), " is not finite (", norms[i],
             "): a NaN or infinity reached a gradient");
    largest = std::max(largest, norms[i]);
  }
  for (std::size_t i = 0; i < parameters.size(); ++i)
    if (norms[i] > max_norm) parameters[i].grad().mul_(max_norm / norms[i]);
  return largest;
}

}  // namespace normgrad::optim
