#include "model.h"

#include <cmath>
#include <sstream>

namespace order_embedding {

namespace ng = normgrad;
using ng::Tensor;

ng::nn::NormSpec parse_model_norm(const std::string& spec) {
  const ng::nn::NormSpec parsed = ng::nn::NormSpec::parse(spec);
  NG_CHECK(
      parsed.kind != ng::nn::NormKind::BatchNorm && parsed.kind != ng::nn::NormKind::WeightNorm,
      "order_embedding", "--norm ", spec,
      ": the caption GRU takes none, layernorm, rmsnorm, prmsnorm[:p] or l2norm");
  return parsed;
}

std::string describe(const ModelConfig& config) {
  std::ostringstream out;
  out << "norm=" << parse_model_norm(config.norm).str() << " vocabulary=" << config.vocabulary
      << " word_dim=" << config.word_dim << " dim=" << config.dim
      << " image_dim=" << config.image_dim << " seed=" << config.seed;
  return out.str();
}

Tensor unit_orthant(const Tensor& x) {
  // The original code divides by the norm without an epsilon; 1e-12 only keeps an all-zero
  // row (an image of no features) from becoming NaN.
  return ng::abs(x * ng::rsqrt(ng::sum(ng::square(x), {-1}, true) + 1e-12));
}

OrderEmbeddingModel::OrderEmbeddingModel(const ModelConfig& config) : config_(config) {
  NG_CHECK(
      config.vocabulary >= 3 && config.word_dim >= 1 && config.dim >= 1 && config.image_dim >= 1,
      "order_embedding",
      "the model needs a vocabulary of at least one word and positive "
      "sizes, got ",
      describe(config));
  NG_CHECK(config.margin >= 0 && std::isfinite(config.margin), "order_embedding",
           "--margin must be non-negative, got ", config.margin);
  ng::Generator generator(config.seed);
  embedding_ = register_module(
      "embedding", std::make_shared<ng::nn::Embedding>(config.vocabulary, config.word_dim));
  ng::nn::init::uniform_(embedding_->weight, -0.1, 0.1, generator);

  encoder_ = register_module(
      "encoder", std::make_shared<ng::nn::Gru>(
                     config.word_dim, config.dim,
                     ng::nn::RecurrentOptions{
                         .cell = {.norm = parse_model_norm(config.norm), .recurrent_bias = false}},
                     generator));
  const std::int64_t h = config.dim;
  Tensor input_weight = ng::empty({3 * h, config.word_dim});
  // utils.norm_weight: orthogonal when square, else uniform on [-0.1, 0.1].
  if (config.word_dim == h)
    for (std::int64_t block = 0; block < 3; ++block)
      ng::nn::init::orthogonal_(input_weight.narrow(0, block * h, h), 1.0, generator);
  else
    ng::nn::init::uniform_(input_weight, -0.1, 0.1, generator);
  Tensor state_weight = ng::empty({3 * h, h});
  for (std::int64_t block = 0; block < 3; ++block)
    ng::nn::init::orthogonal_(state_weight.narrow(0, block * h, h), 1.0, generator);
  ng::nn::RecurrentCell& cell = encoder_->cell();
  cell.set_weights(input_weight, state_weight);
  ng::nn::init::constant_(cell.bias_ih, 0.0);

  image_map_ =
      register_module("image_map", std::make_shared<ng::nn::Linear>(config.image_dim, config.dim));
  ng::nn::init::xavier_uniform_(image_map_->weight, 1.0, generator);
  ng::nn::init::constant_(image_map_->bias, 0.0);
}

Tensor OrderEmbeddingModel::encode_captions(const CaptionBatch& batch) {
  NG_CHECK(batch.tokens.defined() && batch.tokens.dim() == 2 && batch.lengths.defined() &&
               batch.lengths.dim() == 1 && batch.lengths.size(0) == batch.tokens.size(1),
           "order_embedding", "captions must be tokens [T, B] and lengths [B], got ",
           batch.tokens.defined() ? batch.tokens.shape() : ng::Shape{}, " and ",
           batch.lengths.defined() ? batch.lengths.shape() : ng::Shape{});
  const Tensor words = embedding_->forward(batch.tokens);  // [T, B, word_dim]
  const ng::nn::RecurrentOutput out = encoder_->forward_lengths(words, batch.lengths);
  return unit_orthant(out.hidden.select(0, 0));  // the last state of each caption
}

Tensor OrderEmbeddingModel::encode_images(const Tensor& features) {
  NG_CHECK(features.defined() && features.dim() == 2 && features.size(1) == config_.image_dim,
           "order_embedding", "image features must be [B, ", config_.image_dim, "], got ",
           features.defined() ? features.shape() : ng::Shape{});
  return unit_orthant(image_map_->forward(features));
}

Tensor OrderEmbeddingModel::loss(const CaptionBatch& captions, const Tensor& features) {
  const Tensor s = encode_captions(captions);
  const Tensor v = encode_images(features);
  return ng::nn::contrastive_hinge_loss(ng::nn::order_violations(s, v), config_.margin);
}

}  // namespace order_embedding
