#include "optim/clip.h"

#include <algorithm>
#include <cmath>

#include "autograd/grad_mode.h"
#include "autograd/ops.h"
#include "core/error.h"

namespace normgrad::optim {

double clip_grad_norm(const std::vector<Tensor>& parameters, double max_norm) {
  NG_CHECK(max_norm > 0, "clip_grad_norm", "max_norm must be positive, got ", max_norm);
  NoGradGuard no_grad;
  // Each gradient's sum of squares in its own dtype (the backend's sums are blocked and
  // pairwise, accurate to a few ulps without a float64 copy of every gradient), added up in
  // float64 on the gradients' device, and read back once: on a GPU, one wait a step.
  Tensor sum_of_squares;
  for (const Tensor& parameter : parameters) {
    const Tensor grad = parameter.defined() ? parameter.grad() : Tensor();
    if (!grad.defined()) continue;
    const Tensor sum = square(grad).sum().to(DType::Float64);
    sum_of_squares =
        sum_of_squares.defined() ? sum_of_squares + sum.to(sum_of_squares.device()) : sum;
  }
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
