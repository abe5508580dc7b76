// Writes the backward graph of a small loss in Graphviz's dot language, the picture in
// docs/autograd.md:
//   autograd_graph > graph.dot && dot -Tsvg graph.dot -o graph.svg
#include <normgrad/normgrad.h>

#include <CLI/CLI.hpp>
#include <iostream>

namespace ng = normgrad;

int main(int argc, char** argv) {
  CLI::App app{"Writes the backward graph of a small loss in Graphviz's dot language"};
  CLI11_PARSE(app, argc, argv);
  ng::manual_seed(0);
  ng::Tensor x = ng::randn({4, 3});                          // a batch of inputs
  ng::Tensor target = ng::randn({4, 2});
  ng::Tensor w = ng::randn({2, 3}).requires_grad_();          // parameters: leaves
  ng::Tensor b = ng::zeros({2}, {.requires_grad = true});
  ng::Tensor h = ng::tanh(ng::nn::functional::linear(x, w, b));
  ng::Tensor loss = ng::nn::mse_loss(h, target);
  std::cout << ng::to_dot(loss);
}
