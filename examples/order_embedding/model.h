#pragma once
// Order embeddings (Vendrov et al. 2016) as the RMSNorm paper trains them for image-caption
// retrieval (its Section 6.3 and Appendix A.3), with the normaliser inside the caption GRU:
//
//   caption  words -> embedding 300 -> GRU 1024 over the words and an end token -> last state
//   image    feature vector (4096 VGG values) -> linear map to 1024
//   each     -> divided by its L2 norm -> absolute value: a point of the non-negative orthant
//
// The GRU is the LayerNorm paper's, whose RMSNorm form the paper's code names rlngru: every
// projection normalised on its own, the reset gate applied after the state side's norm,
//   [r, u] = sigmoid( N1(W_g x + b_g) + N2(U_g h) )
//   h~     = tanh( N3(W_c x + b_c) + r * N4(U_c h) )
//   h'     = u h + (1 - u) h~
// which is nn::Gru with recurrent_bias off. Initialisation as the original code's utils.py:
// the embedding and W uniform on [-0.1, 0.1], each of U's three H x H blocks orthogonal, the
// image map Xavier-uniform, biases 0 and gains 1.
//
// Training compares captions and images through their order violations and the contrastive
// hinge loss over the batch (nn/ranking_losses.h).

#include <normgrad/normgrad.h>

#include <cstdint>
#include <memory>
#include <string>

#include "vocabulary.h"

namespace order_embedding {

struct ModelConfig {
  std::string norm = "rmsnorm";  // none, layernorm, rmsnorm, prmsnorm[:p], l2norm
  std::int64_t vocabulary = 0;   // words + 2 (Vocabulary::size)
  std::int64_t word_dim = 300;
  std::int64_t dim = 1024;  // the GRU's and the embedding space's
  std::int64_t image_dim = 4096;
  std::uint64_t seed = 1;  // the initial weights
  // The contrastive loss's margin (config.json keeps it among the training settings).
  double margin = 0.05;
};

// The norm spec as this model takes it: one that normalises outputs, or none; an Error for
// batchnorm and weightnorm, which the paper does not run here, and for a bad spec.
normgrad::nn::NormSpec parse_model_norm(const std::string& spec);

// One line naming everything a checkpoint must agree with.
std::string describe(const ModelConfig& config);

class OrderEmbeddingModel : public normgrad::nn::Module {
 public:
  explicit OrderEmbeddingModel(const ModelConfig& config);
  std::string type_name() const override { return "OrderEmbeddingModel"; }
  const ModelConfig& config() const { return config_; }

  // Captions (CaptionBatch's tokens [T, B] and lengths [B], on the model's device) -> [B, dim].
  normgrad::Tensor encode_captions(const CaptionBatch& batch);
  // Image features [B, image_dim] -> [B, dim].
  normgrad::Tensor encode_images(const normgrad::Tensor& features);
  // The summed contrastive hinge loss of B captions against their B images, with the
  // config's margin.
  normgrad::Tensor loss(const CaptionBatch& captions, const normgrad::Tensor& features);

 private:
  ModelConfig config_;
  std::shared_ptr<normgrad::nn::Embedding> embedding_;
  std::shared_ptr<normgrad::nn::Gru> encoder_;
  std::shared_ptr<normgrad::nn::Linear> image_map_;
};

// x / ||x|| per row, then |.|: where both encoders put their outputs.
normgrad::Tensor unit_orthant(const normgrad::Tensor& x);

}  // namespace order_embedding
