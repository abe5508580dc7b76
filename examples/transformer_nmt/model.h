#pragma once
// The Transformer translation model of the RMSNorm paper's Table 4 (Vaswani et al. 2017, the
// "base" setting), with every norm slot built from one spec:
//
//   embed      x = sqrt(d) E[token] + PE[position]       (sinusoidal positions, then dropout)
//   encoder    N layers: self-attention and the feed-forward network, each wrapped as
//              post-norm x = Norm(x + Dropout(F(x)))  (the paper's) or
//              pre-norm  x = x + Dropout(F(Norm(x)))  (and one more norm at the stack's end)
//   decoder    N layers: causal self-attention, attention over the encoder's output, the
//              feed-forward network, wrapped the same way
//   output     logits = states E^T                    (the embedding table, when tied)
//
// With tie_embeddings (the default) one table over the joint vocabulary serves the source
// embedding, the target embedding and the output projection, as fairseq's
// --share-all-embeddings. Initialisation: Xavier uniform for every weight matrix of the
// layers, biases 0, norm gains 1, embeddings N(0, 1/d), all drawn from the model's generator.
//
// Positions: the sinusoid is computed for any position, kept in a table that grows on demand,
// so no sentence is too long for the model; training leaves out pairs longer than its
// max_length and decoding stops at its own maximum.

#include <normgrad/normgrad.h>

#include <cstdint>
#include <memory>
#include <string>

namespace transformer_nmt {

struct ModelConfig {
  std::int64_t vocabulary_size = 8000;  // the joint subword vocabulary of source and target
  std::int64_t model_size = 256;        // d_model
  std::int64_t feed_forward_size = 1024;
  std::int64_t heads = 4;
  std::int64_t encoder_layers = 3;
  std::int64_t decoder_layers = 3;
  // On the embeddings, every sublayer's output, inside the feed-forward network and on the
  // attention weights, in training.
  double dropout = 0.1;
  std::string norm = "layernorm";  // none, layernorm, rmsnorm, prmsnorm:p, l2norm
  bool pre_norm = false;           // false: post-norm, as the paper
  bool tie_embeddings = true;
  normgrad::DType dtype = normgrad::DType::Float32;  // Float64 for gradient checks
  // "bfloat16": mixed precision (common/precision.h); the embeddings' sums are rounded to
  // bfloat16 and every layer after them computes on bfloat16 activations, in float32.
  std::string precision = "float32";
};

// An Error naming the first value of `config` the model cannot be built with: sizes below 1,
// a model size the heads do not divide, dropout outside [0, 1), a norm spec that is unknown or
// not an activation norm (batchnorm, weightnorm), an unknown precision.
void check(const ModelConfig& config);

class TransformerNmt : public normgrad::nn::Module {
 public:
  // `generator` draws the initial weights and, in training, every dropout mask; it must
  // outlive the model (a run saves it with its training states, so resume is exact).
  TransformerNmt(const ModelConfig& config, normgrad::Generator& generator);
  std::string type_name() const override { return "TransformerNmt"; }
  const ModelConfig& config() const { return config_; }

  // source int64 [B, S] with its padding mask [B, S] (1 at padding) -> the encoder's output
  // [B, S, d].
  normgrad::Tensor encode(const normgrad::Tensor& source, const normgrad::Tensor& source_padding);

  // Teacher forcing: the logits [B, T, V] of every target position given target_input [B, T]
  // (bos, y_1 .. y_{T-1}). Padded target positions get logits too; the loss ignores them.
  // They are in the activations' dtype (bfloat16 in mixed precision; cross_entropy scores
  // them in float32).
  normgrad::Tensor forward(const normgrad::Tensor& memory, const normgrad::Tensor& source_padding,
                           const normgrad::Tensor& target_input);

  // Decoding a position at a time: start() takes the encoder's output once; step() feeds the
  // previous tokens [R] (bos first) and returns the logits [R, V] of the next position, equal
  // to forward()'s at that position, at the cost of the new position only, in the parameters'
  // dtype, so that a search adds its scores in float32 in mixed precision too.
  normgrad::nn::TransformerDecoderCache start_decoding(
      const normgrad::Tensor& memory, const normgrad::Tensor& source_padding) const;
  normgrad::Tensor decode_step(const normgrad::Tensor& previous_tokens,
                               normgrad::nn::TransformerDecoderCache& cache);

 private:
  // sqrt(d) E[tokens] + PE[offset ..], then dropout in training: [B, L, d].
  normgrad::Tensor embed(const normgrad::nn::Embedding& table, const normgrad::Tensor& tokens,
                         std::int64_t offset);
  // PE rows offset .. offset + length - 1, on the model's device.
  normgrad::Tensor positions(std::int64_t offset, std::int64_t length);
  normgrad::Tensor output_logits(const normgrad::Tensor& states);
  void initialise(normgrad::Generator& generator);

  ModelConfig config_;
  normgrad::DType activation_dtype_;
  normgrad::Generator* generator_;
  std::shared_ptr<normgrad::nn::Embedding> source_embedding_, target_embedding_;
  normgrad::Tensor output_weight_;  // [V, d]: the target embedding's table when tied
  std::shared_ptr<normgrad::nn::TransformerEncoder> encoder_;
  std::shared_ptr<normgrad::nn::TransformerDecoder> decoder_;
  normgrad::Tensor position_table_;  // grows by doubling; not a parameter or a buffer
};

}  // namespace transformer_nmt
