#pragma once
// Nodes of the backward graph.
//
// Every differentiable op that sees an input requiring grad creates one Node and makes it
// the grad_fn of its output. A Node knows, for each input, the Node that receives that
// input's gradient (`next`): the input's own grad_fn, or, for a leaf, its AccumulateGrad.
// Each op has exactly one output, so a Node receives exactly one gradient.

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "core/tensor.h"
#include "profiler/recorder.h"

namespace normgrad::autograd {

class Node {
 public:
  explicit Node(const char* name);  // a string literal, e.g. "MulBackward"
  virtual ~Node();
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;

  const char* name() const { return name_; }
  // The profiler's span (a module's forward) that was open when the node was made, for its
  // backward to be filed under.
  profiler::SpanRef profile_span() const { return profile_span_; }
  // Creation order: a node is always created after the nodes it points to.
  std::uint64_t sequence_number() const { return sequence_number_; }

  // Gradient of the output in, gradients of the inputs out: one per entry of `next`, each
  // undefined where that input needs none.
  virtual std::vector<Tensor> apply(const Tensor& grad_output) = 0;
  // Frees what backward needed, once a backward pass without retain_graph has used it.
  virtual void release_saved() {}

  // One entry per input; null for an input that needs no gradient.
  std::vector<std::shared_ptr<Node>> next;

 private:
  const char* name_;
  std::uint64_t sequence_number_;
  profiler::SpanRef profile_span_;
};

using SavedTensors = std::vector<Tensor>;
using BackwardFunction =
    std::function<std::vector<Tensor>(const Tensor& grad_output, const SavedTensors& saved)>;

// The node that almost every op uses: a backward function written beside the op's forward,
// plus the tensors it saved. Saved tensors are kept without their history (no reference
// cycles) and with the storage version they had when saved, so that an in-place change made
// afterwards is caught instead of giving a wrong gradient.
class FunctionNode final : public Node {
 public:
  FunctionNode(const char* name, BackwardFunction backward, SavedTensors saved,
               std::vector<Shape> input_shapes);

  std::vector<Tensor> apply(const Tensor& grad_output) override;
  void release_saved() override;

 private:
  BackwardFunction backward_;
  SavedTensors saved_;
  std::vector<std::uint64_t> saved_versions_;
  std::vector<Shape> input_shapes_;  // to check every gradient a backward returns
  bool released_ = false;
};

// The end of the graph for a leaf that requires grad: adds the gradient into leaf.grad().
class AccumulateGrad final : public Node {
 public:
  explicit AccumulateGrad(std::shared_ptr<TensorImpl> leaf);
  std::vector<Tensor> apply(const Tensor& grad_output) override;
  const std::shared_ptr<TensorImpl>& leaf() const { return leaf_; }

 private:
  std::shared_ptr<TensorImpl> leaf_;
};

}  // namespace normgrad::autograd
