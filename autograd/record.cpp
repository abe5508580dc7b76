#include "autograd/record.h"

#include "autograd/autograd_meta.h"
#include "autograd/primitives.h"

namespace normgrad::autograd {

bool needs_grad(const std::vector<Tensor>& tensors) {
  if (!GradMode::is_enabled()) return false;
  for (const Tensor& tensor : tensors)
    if (tensor.requires_grad()) return true;
  return false;
}

void record(const char* name, const Tensor& output, const std::vector<Tensor>& inputs,
            SavedTensors saved, BackwardFunction backward) {
  std::vector<Shape> input_shapes;
  input_shapes.reserve(inputs.size());
  for (const Tensor& input : inputs) input_shapes.push_back(input.defined() ? input.shape() : Shape{});
  auto node = std::make_shared<FunctionNode>(name, std::move(backward), std::move(saved),
                                             std::move(input_shapes));
  node->next.reserve(inputs.size());
  for (const Tensor& input : inputs) node->next.push_back(gradient_edge(input));
  AutogradMeta& meta = meta_of(output);
  meta.requires_grad = true;
  meta.grad_fn = std::move(node);
}

Tensor sum_to(const Tensor& grad, const Shape& shape) {
  if (grad.shape() == shape) return grad;
  // Leading dims that broadcasting added, and dims where `shape` has size 1.
  const std::size_t lead = grad.shape().size() - shape.size();
  std::uint64_t reduced = 0;
  for (std::size_t d = 0; d < grad.shape().size(); ++d)
    if (d < lead || (shape[d - lead] == 1 && grad.shape()[d] != 1)) reduced |= 1ull << d;
  Tensor summed = primitive::reduce(backend::ReduceOp::Sum, grad, reduced, 1.0, "sum_to");
  return summed.view(shape);
}

}  // namespace normgrad::autograd
