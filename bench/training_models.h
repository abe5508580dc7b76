#pragma once
// The two models whose training step bench_training_step times (bench_training_step_torch.py
// builds the same ones in PyTorch):
//   - a GRU language model: embedding -> one GRU layer -> linear over the vocabulary, the
//     recurrent core of the paper's RNNSearch (its App. A.1) at a size one CPU step can take;
//   - ConvPool-CNN-C, the paper's CIFAR-10 model (paper, Appendix A.4), layer for layer.
// The norm is a spec (norms/factory.h) for every norm slot; "none" is the plain model.

#include <normgrad/normgrad.h>

#include <memory>
#include <string>

namespace normgrad::bench {

struct GruLanguageModel : nn::Module {
  std::shared_ptr<nn::Embedding> embedding;
  std::shared_ptr<nn::Gru> gru;
  std::shared_ptr<nn::Linear> output;

  GruLanguageModel(std::int64_t vocabulary, std::int64_t embedding_size, std::int64_t hidden,
                   const std::string& norm) {
    embedding =
        register_module("embedding", std::make_shared<nn::Embedding>(vocabulary, embedding_size));
    gru = register_module("gru",
                          std::make_shared<nn::Gru>(embedding_size, hidden,
                                                    nn::RecurrentOptions{.cell = {.norm = norm}}));
    output = register_module("output", std::make_shared<nn::Linear>(hidden, vocabulary));
  }

  // tokens and targets: int64 [T, B]; the mean cross-entropy of predicting targets.
  Tensor loss(const Tensor& tokens, const Tensor& targets) {
    const Tensor states = gru->forward(embedding->forward(tokens)).output;  // [T, B, H]
    return nn::cross_entropy(output->forward(states), targets);
  }
};

// ConvPool-CNN-C: noise, 3 x conv 96, pool, dropout, 3 x conv 192, pool, dropout, conv 192
// (valid), 2 x NIN 192, global average pool, dense 192 -> 10. Every conv and the dense layer
// is followed by the norm (over each channel's map for the convolutions) and the
// nonlinearity, leaky ReLU 0.1 (none after the dense layer).
inline std::shared_ptr<nn::Sequential> conv_pool_cnn_c(const std::string& norm) {
  auto model = std::make_shared<nn::Sequential>();
  const auto conv = [&](std::int64_t in, std::int64_t out, std::int64_t kernel,
                        std::int64_t padding) {
    model->push_back(
        std::make_shared<nn::Conv2d>(in, out, kernel, nn::Conv2dOptions{.padding = padding}));
    if (nn::NormSpec::parse(norm).normalises_outputs())
      model->push_back(nn::make_norm(norm, out, nn::NormLayout::ChannelMaps));
    model->push_back(std::make_shared<nn::LeakyReLU>(0.1));
  };
  model->push_back(std::make_shared<nn::GaussianNoise>(0.15));
  conv(3, 96, 3, 1);
  conv(96, 96, 3, 1);
  conv(96, 96, 3, 1);
  model->push_back(std::make_shared<nn::MaxPool2d>(2));
  model->push_back(std::make_shared<nn::Dropout>(0.5));
  conv(96, 192, 3, 1);
  conv(192, 192, 3, 1);
  conv(192, 192, 3, 1);
  model->push_back(std::make_shared<nn::MaxPool2d>(2));
  model->push_back(std::make_shared<nn::Dropout>(0.5));
  conv(192, 192, 3, 0);
  conv(192, 192, 1, 0);
  conv(192, 192, 1, 0);
  model->push_back(std::make_shared<nn::GlobalAvgPool2d>());
  model->push_back(std::make_shared<nn::Linear>(192, 10));
  if (nn::NormSpec::parse(norm).normalises_outputs()) model->push_back(nn::make_norm(norm, 10));
  return model;
}

}  // namespace normgrad::bench
