// The basic layers (nn/linear.h, embedding.h, activation.h, dropout.h, sequential.h): values,
// gradients against finite differences, initialisation, modes, and bad input.

#include "helpers.h"

using namespace normgrad;
using testing::all_close;
using testing::leaf;
using Inputs = std::vector<Tensor>;

TEST_CASE("Linear computes x W^T + b with PyTorch's initial bounds, and its gradients check") {
  manual_seed(3);
  nn::Linear linear(16, 4, {.dtype = DType::Float64});
  CHECK(linear.weight.shape() == Shape{4, 16});
  CHECK(linear.bias.shape() == Shape{4});
  CHECK(abs(linear.weight).max().item() <= 0.25);  // 1 / sqrt(16)
  CHECK(abs(linear.weight).max().item() > 0.2);    // and it does spread out to the bound
  CHECK(abs(linear.bias).max().item() <= 0.25);
  const Tensor x = leaf({3, 5, 16}, 1);
  CHECK(all_close(linear.forward(x), matmul(x, linear.weight.t()) + linear.bias, 1e-12, 1e-12));
  CHECK(linear(x).shape() == Shape{3, 5, 4});
  CHECK_GRADIENTS([&](const Inputs& in) { return nn::functional::linear(in[0], in[1], in[2]); },
                  {x, leaf({4, 16}, 2), leaf({4}, 3)});
  nn::Linear no_bias(3, 2, {.bias = false});
  CHECK_FALSE(no_bias.bias.defined());
  CHECK(no_bias.named_parameters().size() == 1);
  CHECK_ERROR(nn::Linear(0, 3), "Linear", "positive");
  CHECK_ERROR(linear.forward(zeros({2, 15}, {.dtype = DType::Float64})), "linear",
              "in_features = 16");
}

TEST_CASE("Embedding looks rows up, and its padding row stays zero and gets no gradient") {
  manual_seed(4);
  nn::Embedding embedding(6, 3, {.padding_index = 2, .dtype = DType::Float64});
  CHECK(all_close(embedding.weight.select(0, 2), std::vector<double>(3, 0.0), 0, 0));
  const Tensor indices =
      tensor({0.0, 2.0, 5.0, 2.0, 1.0, 0.0}, {.dtype = DType::Int64}).view({2, 3});
  const Tensor rows = embedding.forward(indices);
  REQUIRE(rows.shape() == Shape{2, 3, 3});
  CHECK(all_close(rows.select(0, 0).select(0, 2), embedding.weight.select(0, 5), 0, 0));
  (rows * rows).sum().backward();
  const Tensor grad = embedding.weight.grad();
  CHECK(all_close(grad.select(0, 2), std::vector<double>(3, 0.0), 0, 0));
  // Row 0 appears twice: its gradient is 2 w_0 from each use.
  CHECK(all_close(grad.select(0, 0), embedding.weight.select(0, 0) * 4.0, 1e-12, 1e-12));
  CHECK(all_close(grad.select(0, 3), std::vector<double>(3, 0.0), 0, 0));  // unused
  nn::Embedding last(4, 2, {.padding_index = -1});
  CHECK(all_close(last.weight.select(0, 3), std::vector<double>(2, 0.0), 0, 0));
  CHECK_ERROR(nn::Embedding(4, 2, {.padding_index = 4}), "Embedding", "padding_index 4",
              "4 embeddings");
  CHECK_ERROR(embedding.forward(tensor({7.0}, {.dtype = DType::Int64})), "index 7", "size 6");
}

TEST_CASE("activation layers forward to their ops") {
  const Tensor x = leaf({2, 5}, 5);
  CHECK(all_close(nn::ReLU().forward(x), relu(x), 0, 0));
  CHECK(all_close(nn::LeakyReLU(0.1).forward(x), leaky_relu(x, 0.1), 0, 0));
  CHECK(all_close(nn::Tanh().forward(x), tanh(x), 0, 0));
  CHECK(all_close(nn::Sigmoid().forward(x), sigmoid(x), 0, 0));
  CHECK(all_close(nn::GELU().forward(x), gelu(x), 0, 0));
  CHECK_GRADIENTS([](const Inputs& in) { return nn::LeakyReLU(0.1).forward(in[0]); }, {x});
}

TEST_CASE("Dropout keeps 1 - p of the values, scaled by 1 / (1 - p), and only in training") {
  Generator generator(9);
  nn::Dropout dropout(0.25, &generator);
  const Tensor x = ones({200, 100}, {.dtype = DType::Float64}).requires_grad_();
  const Tensor y = dropout.forward(x);
  const double kept = gt(y, 0.0).sum().item() / 20000.0;
  CHECK(kept == doctest::Approx(0.75).epsilon(0.02));
  CHECK(all_close(y.max(), std::vector<double>{1.0 / 0.75}, 1e-12, 0));
  // The gradient is the same mask: zero where dropped, 1 / (1 - p) where kept.
  y.sum().backward();
  CHECK(all_close(x.grad(), y.detach(), 0, 0));
  // The same seed drops the same values.
  Generator again(9);
  CHECK(all_close(nn::Dropout(0.25, &again).forward(x), y, 0, 0));
  dropout.eval();
  CHECK(all_close(dropout.forward(x), x, 0, 0));
  CHECK(all_close(nn::Dropout(1.0).forward(x), zeros({200, 100}, {.dtype = DType::Float64}), 0, 0));
  CHECK_ERROR(nn::Dropout(1.5), "Dropout", "[0, 1]", "1.5");
  CHECK_ERROR(nn::functional::dropout(zeros({2}, {.dtype = DType::Int64}), 0.5, true), "dropout",
              "int64");
}

TEST_CASE("dropout_mask: 0 or 1 / (1 - p), the same for the same seed, ones for p = 0") {
  Generator generator(4);
  const Tensor mask = nn::functional::dropout_mask({300, 100}, 0.2, generator,
                                                   {.dtype = DType::Float64});
  CHECK(!mask.requires_grad());
  const double kept = gt(mask, 0.0).sum().item() / 30000.0;
  CHECK(kept == doctest::Approx(0.8).epsilon(0.02));
  // Every value is 0 or the scale: kept values times (1 - p) are exactly 1.
  CHECK(all_close(mask * 0.8, gt(mask, 0.0).to(DType::Float64), 1e-15, 0));
  Generator again(4);
  CHECK(all_close(nn::functional::dropout_mask({300, 100}, 0.2, again, {.dtype = DType::Float64}),
                  mask, 0, 0));
  CHECK(all_close(nn::functional::dropout_mask({3, 4}, 0.0, generator), ones({3, 4}), 0, 0));
  // functional::dropout multiplies by the mask the same generator would draw.
  Generator g1(6), g2(6);
  const Tensor x = rand({20, 30}, g1, {.dtype = DType::Float64});
  Generator g3(7), g4(7);
  CHECK(all_close(nn::functional::dropout(x, 0.3, true, g3),
                  x * nn::functional::dropout_mask({20, 30}, 0.3, g4, {.dtype = DType::Float64}),
                  0, 0));
  CHECK_ERROR(nn::functional::dropout_mask({2}, -0.1, generator), "dropout_mask", "-0.1");
  CHECK_ERROR(nn::functional::dropout_mask({2}, 0.5, generator, {.dtype = DType::Int64}),
              "dropout_mask", "int64");
}

TEST_CASE("GaussianNoise adds N(0, sigma^2) in training and nothing in evaluation") {
  Generator generator(10);
  nn::GaussianNoise noise(0.15, &generator);
  const Tensor x = full({400, 100}, 2.0, {.dtype = DType::Float64});
  const Tensor y = noise.forward(x);
  CHECK((y - x).mean().item() == doctest::Approx(0.0).epsilon(0.01).scale(1.0));
  CHECK(std::sqrt((y - x).var().item()) == doctest::Approx(0.15).epsilon(0.02));
  noise.eval();
  CHECK(all_close(noise.forward(x), x, 0, 0));
  CHECK_ERROR(nn::GaussianNoise(-1), "GaussianNoise", "-1");
}

TEST_CASE("Sequential chains layers, names them 0, 1, ..., and passes train and eval down") {
  manual_seed(5);
  auto model = std::make_shared<nn::Sequential>();
  model->push_back(std::make_shared<nn::Linear>(8, 6, nn::LinearOptions{.dtype = DType::Float64}));
  model->push_back(nn::make_norm("rmsnorm", 6, nn::NormLayout::Features, DType::Float64));
  model->push_back(std::make_shared<nn::Tanh>());
  model->push_back(std::make_shared<nn::Dropout>(0.5));
  CHECK(model->size() == 4);
  std::vector<std::string> names;
  for (const auto& [name, parameter] : model->named_parameters()) names.push_back(name);
  CHECK(names == std::vector<std::string>{"0.weight", "0.bias", "1.gain"});
  model->eval();
  CHECK_FALSE((*model)[3].is_training());
  const Tensor x = leaf({4, 8}, 6);
  auto& linear = dynamic_cast<nn::Linear&>((*model)[0]);
  const Tensor expected = tanh(nn::rms_norm_composed(matmul(x, linear.weight.t()) + linear.bias, 1,
                                                     Tensor(), Tensor(), 1e-5));
  CHECK(all_close(model->forward(x), expected, 1e-12, 1e-12));
  CHECK_ERROR((*model)[4], "Sequential", "index 4", "4 layers");
  CHECK_ERROR(model->push_back(nullptr), "Sequential", "null");
}
