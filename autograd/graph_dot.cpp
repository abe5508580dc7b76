#include "autograd/graph_dot.h"

#include <sstream>
#include <unordered_map>

#include "autograd/autograd_meta.h"
#include "base/error.h"

namespace normgrad {

std::string to_dot(const Tensor& root) {
  NG_CHECK(root.defined(), "to_dot", "the tensor is undefined");
  std::ostringstream dot;
  dot << "digraph backward {\n  rankdir=BT;\n  node [fontname=\"Helvetica\", fontsize=11];\n";
  dot << "  root [label=\"" << to_string(root.shape()) << " " << root.dtype()
      << "\", shape=note, style=filled, fillcolor=\"#dddddd\"];\n";
  std::shared_ptr<autograd::Node> start = autograd::gradient_edge(root);
  if (!start) {
    dot << "}\n";
    return dot.str();
  }
  std::unordered_map<const autograd::Node*, int> ids;
  std::vector<const autograd::Node*> stack{start.get()};
  ids[start.get()] = 0;
  while (!stack.empty()) {
    const autograd::Node* node = stack.back();
    stack.pop_back();
    const int id = ids[node];
    if (const auto* leaf = dynamic_cast<const autograd::AccumulateGrad*>(node)) {
      dot << "  n" << id << " [label=\"leaf " << to_string(leaf->leaf()->shape)
          << "\", shape=ellipse, style=filled, fillcolor=\"#cfe8ff\"];\n";
    } else {
      dot << "  n" << id << " [label=\"" << node->name()
          << "\", shape=box, style=filled, fillcolor=\"#ffe9c7\"];\n";
    }
    for (const auto& next : node->next) {
      if (!next) continue;
      auto [it, fresh] = ids.try_emplace(next.get(), static_cast<int>(ids.size()));
      if (fresh) stack.push_back(next.get());
      dot << "  n" << id << " -> n" << it->second << ";\n";
    }
  }
  dot << "  root -> n0;\n}\n";
  return dot.str();
}

}  // namespace normgrad
