#pragma once
// How a differentiable op joins the graph. The pattern, used by every op in functions/:
//
//   Tensor exp(const Tensor& x) {
//     Tensor y = primitive::unary(UnaryOp::Exp, x, "exp");       // forward, no graph
//     if (needs_grad(x))                                           // d/dx e^x = e^x
//       record("ExpBackward", y, {x}, {y}, [](const Tensor& dy, const SavedTensors& s) {
//         return Grads{dy * s[0]};
//       });
//     return y;
//   }

#include <vector>

#include "autograd/grad_mode.h"
#include "autograd/node.h"

namespace normgrad::autograd {

using Grads = std::vector<Tensor>;

// True when grad mode is on and any of the tensors requires grad.
template <typename... Tensors>
bool needs_grad(const Tensors&... tensors) {
  return GradMode::is_enabled() && (tensors.requires_grad() || ...);
}
bool needs_grad(const std::vector<Tensor>& tensors);

// Makes `output` (a fresh tensor) the result of a differentiable op on `inputs`: it gets a
// FunctionNode named `name` that runs `backward` with the `saved` tensors, and returns one
// gradient per input (undefined for inputs that need none). An input may be undefined (an
// optional operand left out); it gets no gradient.
void record(const char* name, const Tensor& output, const std::vector<Tensor>& inputs,
            SavedTensors saved, BackwardFunction backward);

// Sums a gradient over the dims that broadcasting expanded, back to `shape`.
Tensor sum_to(const Tensor& grad, const Shape& shape);

}  // namespace normgrad::autograd
