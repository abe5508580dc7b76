// The README's quick start: a 2-32-1 tanh network learns y = x0 * x1 on [-1, 1]^2.
#include <normgrad/normgrad.h>

#include <CLI/CLI.hpp>
#include <cstdio>

namespace ng = normgrad;

int main(int argc, char** argv) {
  CLI::App app{"The README's quick start: a 2-32-1 tanh network learns y = x0 * x1"};
  CLI11_PARSE(app, argc, argv);  // --help, and an error for any argument
  ng::manual_seed(0);
  ng::Tensor x = ng::rand({512, 2}) * 2.0 - 1.0;                         // inputs
  ng::Tensor y = (x.select(1, 0) * x.select(1, 1)).unsqueeze(1);         // targets
  ng::Tensor w1 = (ng::randn({32, 2}) * 0.7).requires_grad_();           // layer 1
  ng::Tensor b1 = ng::zeros({32}, {.requires_grad = true});
  ng::Tensor w2 = (ng::randn({1, 32}) * 0.2).requires_grad_();           // layer 2
  ng::Tensor b2 = ng::zeros({1}, {.requires_grad = true});
  ng::optim::SGD optimizer({w1, b1, w2, b2}, {.lr = 0.1, .momentum = 0.9});

  for (int step = 0; step <= 1000; ++step) {
    ng::Tensor hidden = ng::tanh(ng::nn::functional::linear(x, w1, b1));
    ng::Tensor prediction = ng::nn::functional::linear(hidden, w2, b2);
    ng::Tensor loss = ng::nn::mse_loss(prediction, y);
    optimizer.zero_grad();
    loss.backward();
    optimizer.step();
    if (step % 100 == 0) std::printf("step %4d   loss %.6f\n", step, loss.item());
  }
}
