#pragma once
// Gradient clipping by global norm, so that the gradients' direction is kept. With
// norm = the L2 norm of all gradients taken together:
//   - norm > max_norm: every gradient is multiplied by max_norm / (norm + 1e-6), which leaves
//     their norm just under max_norm (norm × max_norm / (norm + 1e-6)); this is PyTorch's
//     clip_grad_norm_ factor, so a clipped step is the same in both;
//   - norm <= max_norm (exactly max_norm included): the gradients are left as they are, bit for
//     bit. PyTorch multiplies them always by min(1, max_norm / (norm + 1e-6)), so within 1e-6
//     below max_norm it shrinks them by a factor of at most 1 - 1e-6 / (max_norm + 1e-6),
//     where normgrad does not.
// Returns the norm before clipping (useful to log). Parameters without a gradient are skipped;
// a non-finite norm is an Error (a NaN or infinity reached a gradient), and nothing is scaled.

#include <vector>

#include "core/tensor.h"

namespace normgrad::optim {

double clip_grad_norm(const std::vector<Tensor>& parameters, double max_norm);

// The same clipping, bit for bit, without waiting for the device: the norm stays a float64
// scalar tensor on the gradients' device, and the factor (max_norm / (norm + 1e-6) where the
// norm exceeds max_norm, else exactly 1) is applied there. A CUDA graph can record it
// (core/cuda.h). A non-finite norm is not caught here, since that needs the host to read it:
// read the returned norm when convenient, and expect NaN gradients after one.
Tensor clip_grad_norm_on_device(const std::vector<Tensor>& parameters, double max_norm);

// Each gradient clipped on its own: one whose L2 norm exceeds max_norm becomes
// g * max_norm / ||g|| (no epsilon), the others are left as they are, bit for bit. This is how
// the order-embedding paper's Theano code clips (its `maxnorm` applied to every gradient; the
// RMSNorm paper's retrieval runs used max_norm 2). Returns the largest norm before clipping; a
// non-finite one is an Error, and nothing is scaled.
double clip_grad_norm_each(const std::vector<Tensor>& parameters, double max_norm);

}  // namespace normgrad::optim
