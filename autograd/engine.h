#pragma once
// The engine: runs a backward pass from one root tensor.

#include "core/tensor.h"

namespace normgrad::autograd {

// Propagates `gradient` (ones for a one-element root when undefined) from `root` back
// through the graph, adding into the .grad() of every leaf that requires grad. Without
// retain_graph, the tensors saved by the graph's nodes are freed as they are used.
void backward(const Tensor& root, const Tensor& gradient, bool retain_graph);

}  // namespace normgrad::autograd
