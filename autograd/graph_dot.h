#pragma once
// to_dot: the backward graph of a tensor in Graphviz's dot language, for teaching.
// Render it with: dot -Tsvg graph.dot -o graph.svg

#include <string>

#include "core/tensor.h"

namespace normgrad {

// Op nodes are boxes named after their backward function (MulBackward, ...); leaves are
// ellipses showing the leaf's shape; edges point from each node to the nodes its gradient
// flows into, as the engine walks them.
std::string to_dot(const Tensor& root);

}  // namespace normgrad
