// nn::functional and the SGD optimizer: gradients, hand-worked steps, and errors.

#include "helpers.h"

using namespace normgrad;
using testing::leaf;
using Inputs = std::vector<Tensor>;
namespace F = normgrad::nn::functional;

TEST_CASE("linear computes x W^T + b and its gradients") {
  const Tensor x = tensor({{1, 2}, {3, 4}});
  const Tensor w = tensor({{1, 0}, {0, 1}, {1, 1}});
  const Tensor b = tensor({10, 20, 30});
  CHECK(F::linear(x, w, b).to_vector<float>() == std::vector<float>{11, 22, 33, 13, 24, 37});
  CHECK(F::linear(x, w).shape() == Shape{2, 3});
  CHECK_GRADIENTS([](const Inputs& in) { return F::linear(in[0], in[1], in[2]); },
                  {leaf({4, 3}, 1), leaf({2, 3}, 2), leaf({2}, 3)});
  CHECK_GRADIENTS([](const Inputs& in) { return F::linear(in[0], in[1]); },
                  {leaf({2, 5, 3}, 1), leaf({4, 3}, 2)});
  CHECK_ERROR(F::linear(x, zeros({3, 5})), "linear", "in_features = 5", "[2, 2]");
  CHECK_ERROR(F::linear(x, w, zeros({2})), "linear", "bias", "[3]");
  CHECK_ERROR(F::linear(x, zeros({3})), "linear", "2-d");
}

TEST_CASE("mse_loss is the mean squared difference") {
  CHECK(nn::mse_loss(tensor({1, 2, 3}), tensor({1, 0, 0})).item() == doctest::Approx(13.0 / 3));
  CHECK_GRADIENTS([](const Inputs& in) { return nn::mse_loss(in[0], in[1]); },
                  {leaf({3, 2}, 1), leaf({3, 2}, 2)});
  CHECK_ERROR(nn::mse_loss(zeros({2}), zeros({3})), "mse_loss", "[2]", "[3]");
}

TEST_CASE("SGD steps worked out by hand") {
  // loss = sum(w * c) has gradient c = [1, -2].
  const Tensor c = tensor({1, -2});
  Tensor w = tensor({1, 1}).requires_grad_();
  optim::SGD plain({w}, {.lr = 0.5});
  (w * c).sum().backward();
  plain.step();
  CHECK(w.to_vector<float>() == std::vector<float>{0.5f, 2.0f});  // w - 0.5 * c

  Tensor m = tensor({1, 1}).requires_grad_();
  optim::SGD momentum({m}, {.lr = 0.5, .momentum = 0.9});
  for (int step = 0; step < 2; ++step) {
    momentum.zero_grad();
    (m * c).sum().backward();
    momentum.step();
  }
  // v1 = c, v2 = 0.9 c + c = 1.9 c; m = 1 - 0.5 (1 + 1.9) c = 1 - 1.45 c
  CHECK(m.to_vector<float>()[0] == doctest::Approx(1 - 1.45));
  CHECK(m.to_vector<float>()[1] == doctest::Approx(1 + 2.9));

  Tensor d = tensor({2, -4}).requires_grad_();
  optim::SGD decay({d}, {.lr = 0.1, .weight_decay = 0.5});
  (d * 0.0).sum().backward();  // gradient 0: only the decay acts
  decay.step();
  CHECK(d.to_vector<float>()[0] == doctest::Approx(2 - 0.1 * 0.5 * 2));

  Tensor untouched = tensor({3}).requires_grad_();
  optim::SGD idle({untouched}, {.lr = 1.0});
  idle.step();  // no gradient yet: nothing moves
  CHECK(untouched.item() == 3);
}

TEST_CASE("SGD refuses bad settings and non-leaf parameters") {
  Tensor w = ones({2}).requires_grad_();
  CHECK_ERROR(optim::SGD({w}, {.lr = -1}), "SGD", "learning rate");
  CHECK_ERROR(optim::SGD({w}, {.lr = 0.1, .momentum = -0.5}), "SGD", "momentum");
  CHECK_ERROR(optim::SGD({w * 2.0}, {.lr = 0.1}), "SGD", "parameter 0", "leaf");
  CHECK_ERROR(optim::SGD({ones({2})}, {.lr = 0.1}), "SGD", "requires grad");
}

TEST_CASE("the quick-start model's loss falls") {
  manual_seed(0);
  Tensor x = rand({128, 2}) * 2.0 - 1.0;
  Tensor y = (x.select(1, 0) * x.select(1, 1)).unsqueeze(1);
  Tensor w1 = (randn({16, 2}) * 0.7).requires_grad_();
  Tensor b1 = zeros({16}, {.requires_grad = true});
  Tensor w2 = (randn({1, 16}) * 0.2).requires_grad_();
  Tensor b2 = zeros({1}, {.requires_grad = true});
  optim::SGD optimizer({w1, b1, w2, b2}, {.lr = 0.1, .momentum = 0.9});
  double first = 0, last = 0;
  for (int step = 0; step < 300; ++step) {
    Tensor loss = nn::mse_loss(F::linear(tanh(F::linear(x, w1, b1)), w2, b2), y);
    optimizer.zero_grad();
    loss.backward();
    optimizer.step();
    (step == 0 ? first : last) = loss.item();
  }
  CHECK(last < first * 0.5);
}
