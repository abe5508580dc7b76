// The backward pass, in four steps:
//   1. walk the graph from the root and count, for every node, how many edges point at it;
//   2. starting from the root, run a node once all the gradients flowing into it have
//      arrived (its count drops to zero), summing gradients that arrive along several edges;
//   3. hand each result to the nodes of its inputs; leaves end in AccumulateGrad;
//   4. run the callbacks that hooks queued during the pass (queue_callback).
// This is Kahn's topological order. Ready nodes are taken newest first, which follows the
// forward pass backwards, so that long chains free their buffers early.

#include "autograd/engine.h"

#include <functional>
#include <queue>
#include <unordered_map>
#include <vector>

#include "autograd/autograd_meta.h"
#include "autograd/grad_mode.h"
#include "autograd/hooks.h"
#include "base/error.h"
#include "core/tensor_internal.h"
#include "profiler/recorder.h"

namespace normgrad::autograd {

namespace {

// The callbacks queued during this thread's current backward pass (queue_callback), or null
// outside one.
thread_local std::vector<std::function<void()>>* queued_callbacks = nullptr;

// Makes `callbacks` the current pass's queue, and the previous one current again at the end
// (a hook may run a backward pass of its own).
class CallbackQueue {
 public:
  explicit CallbackQueue(std::vector<std::function<void()>>& callbacks)
      : previous_(queued_callbacks) {
    queued_callbacks = &callbacks;
  }
  ~CallbackQueue() { queued_callbacks = previous_; }
  CallbackQueue(const CallbackQueue&) = delete;
  CallbackQueue& operator=(const CallbackQueue&) = delete;

 private:
  std::vector<std::function<void()>>* previous_;
};

struct NewestFirst {
  bool operator()(const Node* a, const Node* b) const {
    return a->sequence_number() < b->sequence_number();
  }
};

// Whether a pending gradient may take the next one in place: nothing else holds it or its
// memory (a node may hand the same tensor to several edges, or pass on a view of what it
// saved), and it is dense. Summing in place spares a fresh buffer per extra edge: a tensor
// read at every step of a recurrence gathers one gradient per step.
bool owned_alone(const Tensor& gradient) {
  return gradient.shared_impl().use_count() == 1 && gradient.storage().use_count() == 1 &&
         gradient.is_contiguous();
}

std::unordered_map<Node*, int> count_dependencies(Node* root) {
  std::unordered_map<Node*, int> dependencies;
  std::vector<Node*> stack{root};
  dependencies[root] = 0;
  while (!stack.empty()) {
    Node* node = stack.back();
    stack.pop_back();
    for (const auto& next : node->next) {
      if (!next) continue;
      auto [it, first_visit] = dependencies.try_emplace(next.get(), 0);
      ++it->second;
      if (first_visit) stack.push_back(next.get());
    }
  }
  return dependencies;
}

Tensor initial_gradient(const Tensor& root, const Tensor& gradient) {
  if (!gradient.defined()) {
    NG_CHECK(root.numel() == 1, "backward", "the root has shape ", root.shape(),
             "; a gradient argument of that shape is needed unless it has one element");
    return ones_like(root);
  }
  NG_CHECK(gradient.shape() == root.shape(), "backward", "gradient of shape ", gradient.shape(),
           " does not match the root's shape ", root.shape());
  NG_CHECK(gradient.dtype() == root.dtype(), "backward", "gradient of dtype ", gradient.dtype(),
           " does not match the root's dtype ", root.dtype());
  NG_CHECK(gradient.device() == root.device(), "backward", "gradient on ", gradient.device(),
           " but the root is on ", root.device());
  return gradient.detach();
}

}  // namespace

void queue_callback(std::function<void()> callback) {
  NG_CHECK(queued_callbacks != nullptr, "queue_callback",
           "there is no backward pass running to queue it to (call it from a hook)");
  NG_CHECK(callback != nullptr, "queue_callback", "the callback is empty");
  queued_callbacks->push_back(std::move(callback));
}

void backward(const Tensor& root, const Tensor& gradient, bool retain_graph) {
  std::shared_ptr<Node> root_node = gradient_edge(root);
  NG_CHECK(root_node != nullptr, "backward",
           "the tensor does not require grad and has no grad_fn: none of the inputs it was "
           "computed from had requires_grad set (or it was computed under NoGradGuard)");
  NoGradGuard no_grad;  // backward passes do not record graphs of their own
  // The kernels outside any node (gradients that meet, summed) are the backward pass's own.
  const profiler::BackwardScope backward_pass("backward");
  Tensor root_gradient = initial_gradient(root, gradient);

  std::vector<std::function<void()>> callbacks;
  const CallbackQueue queue(callbacks);

  std::unordered_map<Node*, int> dependencies = count_dependencies(root_node.get());
  std::unordered_map<Node*, Tensor> pending;  // gradients summed so far, per node
  std::priority_queue<Node*, std::vector<Node*>, NewestFirst> ready;
  pending[root_node.get()] = root_gradient;
  ready.push(root_node.get());

  while (!ready.empty()) {
    Node* node = ready.top();
    ready.pop();
    Tensor grad_output;
    if (auto entry = pending.find(node); entry != pending.end()) {
      grad_output = std::move(entry->second);
      pending.erase(entry);
    }

    // A node that no gradient reached (every path to it gave "none") passes "none" on.
    std::vector<Tensor> grad_inputs(node->next.size());
    if (grad_output.defined()) {
      const profiler::BackwardScope this_node(node->name(), node->profile_span());
      grad_inputs = node->apply(grad_output);
      grad_output = Tensor();
      if (!retain_graph) node->release_saved();
    }

    for (std::size_t i = 0; i < grad_inputs.size(); ++i) {
      Node* next = node->next[i].get();
      if (!next) continue;
      if (grad_inputs[i].defined()) {
        Tensor& slot = pending[next];
        if (!slot.defined()) {
          slot = std::move(grad_inputs[i]);
        } else if (owned_alone(slot)) {
          detail::backend_of(slot).binary(backend::BinaryOp::Add, detail::ref(slot),
                                          detail::ref(slot), detail::ref(grad_inputs[i]), 0);
        } else {
          Tensor sum = detail::make_tensor(slot.shape(), slot.dtype(), slot.device());
          detail::backend_of(sum).binary(backend::BinaryOp::Add, detail::ref(sum),
                                         detail::ref(slot), detail::ref(grad_inputs[i]), 0);
          slot = std::move(sum);
        }
      }
      if (--dependencies[next] == 0) ready.push(next);
    }
  }
  // By index: a callback may queue another, which grows the vector.
  for (std::size_t i = 0; i < callbacks.size(); ++i) {
    const std::function<void()> callback = callbacks[i];
    callback();
  }
}

}  // namespace normgrad::autograd
