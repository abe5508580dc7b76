#pragma once
// What autograd attaches to a tensor: whether it requires grad, its accumulated gradient (for
// leaves), the Node that produced it (for results of ops) and, for leaves, the
// AccumulateGrad node that all uses of the leaf share.

#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "autograd/hooks.h"
#include "autograd/node.h"
#include "core/tensor.h"

namespace normgrad::autograd {

struct AutogradMeta {
  bool requires_grad = false;
  Tensor grad;
  std::shared_ptr<Node> grad_fn;
  std::weak_ptr<AccumulateGrad> grad_accumulator;
  // Leaves only: run after each pass's gradient is accumulated (autograd/hooks.h), with ids.
  std::vector<std::pair<std::uint64_t, PostAccumulateGradHook>> post_accumulate_hooks;
  std::uint64_t last_hook_id = 0;
};

// The meta of a tensor, created on first use.
AutogradMeta& meta_of(const Tensor& tensor);
// The node that receives this tensor's gradient: its grad_fn, or its leaf accumulator;
// null when it does not require grad.
std::shared_ptr<Node> gradient_edge(const Tensor& tensor);

}  // namespace normgrad::autograd
