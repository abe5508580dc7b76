#include "model.h"

#include <cmath>

#include "common/precision.h"

namespace transformer_nmt {

namespace ng = normgrad;

void check(const ModelConfig& c) {
  const auto at_least_one = [](const char* what, std::int64_t value) {
    NG_CHECK(value >= 1, "transformer_nmt", what, " must be at least 1, got ", value);
  };
  NG_CHECK(c.vocabulary_size >= 16, "transformer_nmt", "vocabulary size must be at least 16, got ",
           c.vocabulary_size);
  at_least_one("model size", c.model_size);
  at_least_one("feed-forward size", c.feed_forward_size);
  at_least_one("heads", c.heads);
  at_least_one("encoder layers", c.encoder_layers);
  at_least_one("decoder layers", c.decoder_layers);
  NG_CHECK(c.model_size % c.heads == 0, "transformer_nmt", "model size ", c.model_size,
           " is not divisible by ", c.heads, " heads");
  NG_CHECK(c.dropout >= 0 && c.dropout < 1, "transformer_nmt", "dropout must be in [0, 1), got ",
           c.dropout);
  const ng::nn::NormSpec spec(c.norm);  // an Error for an unknown spec
  NG_CHECK(spec.kind != ng::nn::NormKind::BatchNorm && spec.kind != ng::nn::NormKind::WeightNorm,
           "transformer_nmt", "norm '", c.norm,
           "' has no place in a Transformer; use none, layernorm, rmsnorm, prmsnorm:p or l2norm");
  examples::activation_dtype(c.precision, c.dtype, "transformer_nmt");
}

TransformerNmt::TransformerNmt(const ModelConfig& config, ng::Generator& generator)
    : config_(config),
      activation_dtype_(
          examples::activation_dtype(config.precision, config.dtype, "transformer_nmt")),
      generator_(&generator) {
  check(config);
  const std::int64_t V = config.vocabulary_size, d = config.model_size;
  const ng::nn::EmbeddingOptions embedding_options{.padding_index = std::nullopt,
                                                   .dtype = config.dtype};
  if (config.tie_embeddings) {
    source_embedding_ =
        register_module("embedding", std::make_shared<ng::nn::Embedding>(V, d, embedding_options));
    target_embedding_ = source_embedding_;
    output_weight_ = source_embedding_->weight;
  } else {
    source_embedding_ = register_module(
        "source_embedding", std::make_shared<ng::nn::Embedding>(V, d, embedding_options));
    target_embedding_ = register_module(
        "target_embedding", std::make_shared<ng::nn::Embedding>(V, d, embedding_options));
    output_weight_ =
        register_parameter("output_weight", ng::zeros({V, d}, {.dtype = config.dtype}));
  }
  const ng::nn::TransformerLayerOptions layer_options{
      .norm = config.norm,
      .placement = config.pre_norm ? ng::nn::NormPlacement::Pre : ng::nn::NormPlacement::Post,
      .activation = ng::nn::FeedForwardActivation::ReLU,
      .dropout = config.dropout,
      .dtype = config.dtype,
      .generator = &generator};
  encoder_ = register_module("encoder", std::make_shared<ng::nn::TransformerEncoder>(
                                            config.encoder_layers, d, config.heads,
                                            config.feed_forward_size, layer_options));
  decoder_ = register_module("decoder", std::make_shared<ng::nn::TransformerDecoder>(
                                            config.decoder_layers, d, config.heads,
                                            config.feed_forward_size, layer_options));
  initialise(generator);
}

void TransformerNmt::initialise(ng::Generator& generator) {
  ng::NoGradGuard no_grad;
  const double embedding_std = 1.0 / std::sqrt(static_cast<double>(config_.model_size));
  ng::nn::init::normal_(source_embedding_->weight, 0.0, embedding_std, generator);
  if (!config_.tie_embeddings) {
    ng::nn::init::normal_(target_embedding_->weight, 0.0, embedding_std, generator);
    ng::nn::init::normal_(output_weight_, 0.0, embedding_std, generator);
  }
  // The layers drew their weights from the default generator; these come from the model's,
  // so that a seed decides the whole model. Norm gains (1-D weights) stay 1, biases become 0.
  for (const ng::nn::Module* stack : {static_cast<const ng::nn::Module*>(encoder_.get()),
                                      static_cast<const ng::nn::Module*>(decoder_.get())}) {
    for (auto& [name, parameter] : stack->named_parameters()) {
      const bool is_bias = name.size() >= 4 && name.compare(name.size() - 4, 4, "bias") == 0;
      if (parameter.dim() >= 2) {
        ng::nn::init::xavier_uniform_(parameter, 1.0, generator);
      } else if (is_bias) {
        parameter.zero_();
      }
    }
  }
}

ng::Tensor TransformerNmt::positions(std::int64_t offset, std::int64_t length) {
  const std::int64_t needed = offset + length;
  const ng::Device device = output_weight_.device();
  if (!position_table_.defined() || position_table_.size(0) < needed ||
      position_table_.device() != device) {
    std::int64_t rows = position_table_.defined() ? position_table_.size(0) : 256;
    while (rows < needed) rows *= 2;
    position_table_ =
        ng::nn::functional::sinusoidal_positional_encoding(rows, config_.model_size, config_.dtype);
    if (!device.is_cpu()) position_table_ = position_table_.to(device);
  }
  return position_table_.narrow(0, offset, length);
}

ng::Tensor TransformerNmt::embed(const ng::nn::Embedding& table, const ng::Tensor& tokens,
                                 std::int64_t offset) {
  const double scale = std::sqrt(static_cast<double>(config_.model_size));
  const ng::Tensor x = ng::add(ng::mul(ng::embedding(table.weight, tokens), scale),
                               positions(offset, tokens.size(1)))
                           .to(activation_dtype_);
  return ng::nn::functional::dropout(x, config_.dropout, is_training(), *generator_);
}

ng::Tensor TransformerNmt::output_logits(const ng::Tensor& states) {
  return ng::nn::functional::linear(states, ng::in_input_dtype(output_weight_, states));
}

ng::Tensor TransformerNmt::encode(const ng::Tensor& source, const ng::Tensor& source_padding) {
  NG_CHECK(source.dim() == 2 && source.dtype() == ng::DType::Int64, "TransformerNmt::encode",
           "the source must be int64 [batch, length], got ", source.dtype(), " ", source.shape());
  return encoder_->forward(embed(*source_embedding_, source, 0), source_padding);
}

ng::Tensor TransformerNmt::forward(const ng::Tensor& memory, const ng::Tensor& source_padding,
                                   const ng::Tensor& target_input) {
  NG_CHECK(target_input.dim() == 2 && target_input.dtype() == ng::DType::Int64,
           "TransformerNmt::forward", "the target must be int64 [batch, length], got ",
           target_input.dtype(), " ", target_input.shape());
  // Causal self-attention: a real position never sees the padding after it, so the target's
  // padding needs no mask of its own.
  const ng::Tensor states = decoder_->forward(embed(*target_embedding_, target_input, 0), memory,
                                              {.memory_padding_mask = source_padding});
  return output_logits(states);
}

ng::nn::TransformerDecoderCache TransformerNmt::start_decoding(
    const ng::Tensor& memory, const ng::Tensor& source_padding) const {
  return decoder_->start(memory, source_padding);
}

ng::Tensor TransformerNmt::decode_step(const ng::Tensor& previous_tokens,
                                       ng::nn::TransformerDecoderCache& cache) {
  NG_CHECK(previous_tokens.dim() == 1, "TransformerNmt::decode_step",
           "the previous tokens must be [rows], got ", previous_tokens.shape());
  const std::int64_t rows = previous_tokens.size(0);
  const ng::Tensor x =
      embed(*target_embedding_, previous_tokens.reshape({rows, 1}), cache.length());
  return output_logits(decoder_->step(x, cache))
      .reshape({rows, config_.vocabulary_size})
      .to(config_.dtype);
}

}  // namespace transformer_nmt
