#pragma once
// The GRU language model whose training step bench_training_step times beside
// examples/convpool_cnn_c's ConvPool-CNN-C (bench_training_step_torch.py builds both in
// PyTorch): embedding -> one GRU layer -> linear over the vocabulary, the recurrent core of the
// paper's RNNSearch (its App. A.1) at a size one CPU step can take. The norm is a spec
// (norms/factory.h) for every norm slot; "none" is the plain model.

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

  // The dtype of the activations: float32, or bfloat16 for mixed precision (the embeddings
  // rounded once; the GRU and the output layer round their float32 parameters for their ops).
  DType activations = DType::Float32;

  // tokens and targets: int64 [T, B]; the mean cross-entropy of predicting targets.
  Tensor loss(const Tensor& tokens, const Tensor& targets) {
    const Tensor inputs = embedding->forward(tokens).to(activations);
    const Tensor states = gru->forward(inputs).output;  // [T, B, H]
    return nn::cross_entropy(output->forward(states), targets);
  }
};

}  // namespace normgrad::bench
