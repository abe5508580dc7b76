#pragma once
// Embedding: a table of num_embeddings vectors of size dim, looked up by int64 indices of
// any shape; the output has shape indices.shape + [dim]. Initialised N(0, 1), as in PyTorch.
//
// With a padding index, that row starts at zero and receives no gradient, so padded
// positions of a batch of sentences never move it.

#include <cstdint>
#include <optional>

#include "nn/layer.h"

namespace normgrad::nn {

struct EmbeddingOptions {
  std::optional<std::int64_t> padding_index;
  DType dtype = DType::Float32;
};

class Embedding : public Layer {
 public:
  Tensor weight;  // [num_embeddings, dim]

  Embedding(std::int64_t num_embeddings, std::int64_t dim, EmbeddingOptions options = {});
  std::string type_name() const override { return "Embedding"; }
  Tensor forward(const Tensor& indices) override;

 private:
  std::optional<std::int64_t> padding_index_;
};

}  // namespace normgrad::nn
