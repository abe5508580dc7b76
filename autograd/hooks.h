#pragma once
// Hooks that a backward pass calls. A post-accumulate-grad hook runs each time a backward pass
// has added a leaf's gradient into leaf.grad(): once per pass and leaf, after the gradients of
// all the leaf's uses have been summed, so that the gradient is final for that pass. It runs
// inside the pass, while the engine goes on to the other nodes after it returns: data-parallel
// training starts sending a bucket of gradients from here while backward still computes the
// rest (distributed/). A leaf that no gradient reached in a pass (every path to it gave none)
// is not called.
//
//   const auto id = autograd::register_post_accumulate_grad_hook(
//       weight, [](const Tensor& leaf) { std::cout << leaf.grad().sum().item() << "\n"; });
//   loss.backward();                      // prints once
//   autograd::remove_post_accumulate_grad_hook(weight, id);

#include <cstdint>
#include <functional>

#include "core/tensor.h"

namespace normgrad::autograd {

using PostAccumulateGradHook = std::function<void(const Tensor& leaf)>;

// Adds `hook` to `leaf`'s hooks, which run in the order they were added; returns its id. An
// Error for a tensor that is not a leaf requiring grad.
std::uint64_t register_post_accumulate_grad_hook(const Tensor& leaf, PostAccumulateGradHook hook);

// Removes the hook with that id; an Error if `leaf` has none such.
void remove_post_accumulate_grad_hook(const Tensor& leaf, std::uint64_t id);

// Queues `callback` to run when the backward pass now running has finished, after every
// node, in the order queued (a callback may queue more). Called from a hook: data-parallel
// training waits there for the gradients it is still exchanging, so that they are final when
// backward() returns. An Error outside a backward pass. A pass that throws drops its queue.
void queue_callback(std::function<void()> callback);

}  // namespace normgrad::autograd
