#pragma once
// Gradient clipping by global norm: when the L2 norm of all gradients taken together exceeds
// max_norm, every gradient is scaled by max_norm / norm, so their direction is kept. Returns
// the norm before clipping (useful to log). Parameters without a gradient are skipped.

#include <vector>

#include "core/tensor.h"

namespace normgrad::optim {

double clip_grad_norm(const std::vector<Tensor>& parameters, double max_norm);

}  // namespace normgrad::optim
