#include "autograd/node.h"

#include <atomic>

#include "autograd/autograd_meta.h"
#include "base/error.h"
#include "core/tensor_internal.h"

namespace normgrad::autograd {

namespace {
std::atomic<std::uint64_t> next_sequence_number{0};
}

Node::Node(const char* name)
    : name_(name),
      sequence_number_(next_sequence_number++),
      profile_span_(profiler::current_span_ref()) {}

Node::~Node() {
  // Freeing a graph as deep as a long unrolled loop would otherwise recurse once per node
  // and overflow the stack. Instead, nodes that only we hold hand their own edges over to
  // this loop before they die.
  std::vector<std::shared_ptr<Node>> pending = std::move(next);
  while (!pending.empty()) {
    std::shared_ptr<Node> node = std::move(pending.back());
    pending.pop_back();
    if (node && node.use_count() == 1) {
      for (auto& edge : node->next) pending.push_back(std::move(edge));
      node->next.clear();
    }
  }
}

FunctionNode::FunctionNode(const char* name, BackwardFunction backward, SavedTensors saved,
                           std::vector<Shape> input_shapes)
    : Node(name),
      backward_(std::move(backward)),
      saved_(std::move(saved)),
      input_shapes_(std::move(input_shapes)) {
  saved_versions_.reserve(saved_.size());
  for (Tensor& tensor : saved_) {
    saved_versions_.push_back(tensor.defined() ? tensor.storage()->version() : 0);
    if (tensor.defined()) tensor = tensor.detach();
  }
}

std::vector<Tensor> FunctionNode::apply(const Tensor& grad_output) {
  NG_CHECK(!released_, name(),
           "trying to run backward through the graph a second time, but the tensors it saved "
           "were freed by the first backward; pass retain_graph=true to the first backward()");
  for (std::size_t i = 0; i < saved_.size(); ++i) {
    if (!saved_[i].defined()) continue;
    const std::uint64_t now = saved_[i].storage()->version();
    NG_CHECK(now == saved_versions_[i], name(), "a tensor of shape ", saved_[i].shape(),
             " that this op saved for backward was modified by an in-place operation (version ",
             now, ", saved at version ", saved_versions_[i],
             "); compute the gradient before changing it, or change a clone()");
  }
  std::vector<Tensor> grads = backward_(grad_output, saved_);
  NG_CHECK(grads.size() == next.size(), name(), "internal error: backward returned ", grads.size(),
           " gradients for ", next.size(), " inputs");
  for (std::size_t i = 0; i < grads.size(); ++i) {
    if (!next[i] || !grads[i].defined()) continue;
    NG_CHECK(grads[i].shape() == input_shapes_[i], name(), "internal error: gradient of shape ",
             grads[i].shape(), " for input ", i, " of shape ", input_shapes_[i]);
  }
  return grads;
}

void FunctionNode::release_saved() {
  if (saved_.empty()) return;  // nothing to free: running it again is harmless
  saved_.clear();
  released_ = true;
}

namespace {

// Whether nothing but the engine's handle holds `gradient` and its memory, and that memory is
// exactly the dense tensor: then a leaf may keep it as its .grad() without a copy.
bool held_by_engine_alone(const Tensor& gradient) {
  return gradient.shared_impl().use_count() == 1 && gradient.storage().use_count() == 1 &&
         gradient.is_contiguous() && gradient.offset() == 0 &&
         gradient.storage()->nbytes() ==
             static_cast<std::size_t>(gradient.numel()) * element_size(gradient.dtype());
}

}  // namespace

AccumulateGrad::AccumulateGrad(std::shared_ptr<TensorImpl> leaf)
    : Node("AccumulateGrad"), leaf_(std::move(leaf)) {}

std::vector<Tensor> AccumulateGrad::apply(const Tensor& grad_output) {
  Tensor leaf(leaf_);
  AutogradMeta& meta = meta_of(leaf);
  NG_CHECK(grad_output.shape() == leaf.shape(), "backward", "internal error: gradient of shape ",
           grad_output.shape(), " for a leaf of shape ", leaf.shape());
  if (!meta.grad.defined()) {
    if (held_by_engine_alone(grad_output)) {
      meta.grad = grad_output;  // the engine drops its handle: this one becomes the only one
    } else {
      // A fresh copy: the incoming gradient may be shared with other leaves of the graph, or
      // be a view into a larger buffer.
      meta.grad = detail::make_tensor(leaf.shape(), leaf.dtype(), leaf.device());
      detail::copy_values(meta.grad, grad_output);
    }
  } else {
    meta.grad.add_(grad_output);
  }
  // A copy of the list: a hook may add or remove hooks.
  const auto hooks = meta.post_accumulate_hooks;
  for (const auto& entry : hooks) entry.second(leaf);
  return {};
}

}  // namespace normgrad::autograd
