#include "optim/clip.h"

#include <cmath>

#include "autograd/grad_mode.h"
#include "autograd/ops.h"
#include "core/error.h"

namespace normgrad::optim {

double clip_grad_norm(const std::vector<Tensor>& parameters, double max_norm) {
  NG_CHECK(max_norm > 0, "clip_grad_norm", "max_norm must be positive, got ", max_norm);
  NoGradGuard no_grad;
  double sum_of_squares = 0;
  for (const Tensor& parameter : parameters) {
    const Tensor grad = parameter.defined() ? parameter.grad() : Tensor();
    // In the gradient's own dtype: the backend's sums are blocked and pairwise, accurate to a
    // few ulps without a float64 copy of every gradient.
    if (grad.defined()) sum_of_squares += square(grad).sum().item();
  }
  const double norm = std::sqrt(sum_of_squares);
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

}  // namespace normgrad::optim
