#pragma once
// What autograd attaches to a tensor: whether it requires grad, its accumulated gradient (for
// leaves), the Node that produced it (for results of ops) and, for leaves, the
// AccumulateGrad node that all uses of the leaf share.

#include <memory>

#include "autograd/node.h"
#include "core/tensor.h"

namespace normgrad::autograd {

struct AutogradMeta {
  bool requires_grad = false;
  Tensor grad;
  std::shared_ptr<Node> grad_fn;
  std::weak_ptr<AccumulateGrad> grad_accumulator;
};

// The meta of a tensor, created on first use.
AutogradMeta& meta_of(const Tensor& tensor);
// The node that receives this tensor's gradient: its grad_fn, or its leaf accumulator;
// null when it does not require grad.
std::shared_ptr<Node> gradient_edge(const Tensor& tensor);

}  // namespace normgrad::autograd
