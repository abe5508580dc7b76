#pragma once
// The Transformer's encoder and decoder (Vaswani et al. 2017), with the normaliser a NormSpec
// (the paper's section 6.1 compares LayerNorm, RMSNorm and pRMSNorm in these layers).
//
// Each sublayer F (self-attention, cross-attention, the feed-forward network) is wrapped as
//   post-norm (the paper's, the default):  x = Norm(x + Dropout(F(x)))
//   pre-norm:                              x = x + Dropout(F(Norm(x)))
// and the feed-forward network is F(x) = W_2 Dropout(act(W_1 x + b_1)) + b_2 with act ReLU or
// GELU. A pre-norm stack ends with one more norm, since its last residual sum is otherwise
// never normalised.
//
// Shapes are batch-first, [batch, len, d_model]. Padding masks are int64 [batch, len],
// nonzero at padded positions (see attention.h). Layer and parameter names follow
// torch.nn.Transformer*Layer's (linear1, linear2, norm1, ...), except that the attention
// children are named self_attention and cross_attention, and a norm's weight is its gain.
//
//   nn::TransformerLayerOptions options{.norm = "rmsnorm"};
//   nn::TransformerEncoder encoder(6, 512, 8, 2048, options);
//   nn::TransformerDecoder decoder(6, 512, 8, 2048, options);
//   Tensor memory = encoder.forward(source, source_padding);
//   Tensor states = decoder.forward(target, memory, {.target_padding_mask = target_padding,
//                                                    .memory_padding_mask = source_padding});

#include <cstdint>
#include <memory>
#include <vector>

#include "core/generator.h"
#include "nn/layer.h"
#include "nn/linear.h"
#include "nn/multi_head_attention.h"
#include "nn/norms/factory.h"

namespace normgrad::nn {

enum class NormPlacement { Post, Pre };
enum class FeedForwardActivation { ReLU, GELU };

struct TransformerLayerOptions {
  // Any activation normaliser; "weightnorm", which reparameterises weights instead, is refused.
  NormSpec norm = "layernorm";
  NormPlacement placement = NormPlacement::Post;
  FeedForwardActivation activation = FeedForwardActivation::ReLU;
  double dropout = 0.1;  // on each sublayer's output, inside the FFN and on attention weights
  DType dtype = DType::Float32;
  Generator* generator = nullptr;  // for the dropout masks; the default generator if null
};

struct TransformerDecoderMasks {
  Tensor target_padding_mask{};  // [batch, target_len]
  Tensor memory_padding_mask{};  // [batch, source_len]
  bool causal = true;            // each target position sees itself and earlier ones only
};

// What a decoder layer keeps between decoding steps: its self-attention's keys and values of
// the positions so far, and its cross-attention's of the encoder's output.
struct TransformerDecoderLayerCache {
  KeyValueCache self, memory;
};

// A decoder stack's caches, and the padding mask of the encoder's output ([batch, source_len],
// or undefined), all following the rows when a beam search reorders them.
struct TransformerDecoderCache {
  std::vector<TransformerDecoderLayerCache> layers;
  Tensor memory_padding_mask;
  // The positions decoded so far.
  std::int64_t length() const { return layers.empty() ? 0 : layers.front().self.length(); }
  // Row i becomes old row rows[i] (int64 [new_rows]).
  void reorder(const Tensor& rows);
};

class TransformerEncoderLayer : public Layer {
 public:
  std::shared_ptr<MultiHeadAttention> self_attention;
  std::shared_ptr<Linear> linear1, linear2;  // d_model -> feed_forward_size -> d_model
  std::shared_ptr<Norm> norm1, norm2;        // around self-attention and the FFN

  TransformerEncoderLayer(std::int64_t d_model, std::int64_t heads, std::int64_t feed_forward_size,
                          TransformerLayerOptions options = {});
  std::string type_name() const override { return "TransformerEncoderLayer"; }
  Tensor forward(const Tensor& x) override;  // no padding
  Tensor forward(const Tensor& x, const Tensor& padding_mask);

 private:
  TransformerLayerOptions options_;
};

class TransformerDecoderLayer : public Module {
 public:
  std::shared_ptr<MultiHeadAttention> self_attention, cross_attention;
  std::shared_ptr<Linear> linear1, linear2;
  std::shared_ptr<Norm> norm1, norm2, norm3;  // around self-, cross-attention and the FFN

  TransformerDecoderLayer(std::int64_t d_model, std::int64_t heads, std::int64_t feed_forward_size,
                          TransformerLayerOptions options = {});
  std::string type_name() const override { return "TransformerDecoderLayer"; }
  // target [batch, target_len, d_model], memory (the encoder's output)
  // [batch, source_len, d_model] -> [batch, target_len, d_model].
  Tensor forward(const Tensor& target, const Tensor& memory,
                 const TransformerDecoderMasks& masks = {});

  // Decoding a position at a time: start(memory) projects the cross-attention's keys and
  // values once; step(y_t, cache) takes the next target position, [batch, 1, d_model], and
  // returns forward()'s output at that position for the whole prefix (causal, with the memory
  // padding mask), adding the position to the cache.
  TransformerDecoderLayerCache start(const Tensor& memory) const;
  Tensor step(const Tensor& target, TransformerDecoderLayerCache& cache,
              const Tensor& memory_padding_mask = Tensor());

 private:
  TransformerLayerOptions options_;
};

// N encoder layers, named layers.0, layers.1, ...; a pre-norm stack adds final_norm.
class TransformerEncoder : public Module {
 public:
  std::vector<std::shared_ptr<TransformerEncoderLayer>> layers;
  std::shared_ptr<Norm> final_norm;  // pre-norm only; null for post-norm

  TransformerEncoder(std::int64_t num_layers, std::int64_t d_model, std::int64_t heads,
                     std::int64_t feed_forward_size, TransformerLayerOptions options = {});
  std::string type_name() const override { return "TransformerEncoder"; }
  Tensor forward(const Tensor& x, const Tensor& padding_mask = Tensor());
};

class TransformerDecoder : public Module {
 public:
  std::vector<std::shared_ptr<TransformerDecoderLayer>> layers;
  std::shared_ptr<Norm> final_norm;  // pre-norm only; null for post-norm

  TransformerDecoder(std::int64_t num_layers, std::int64_t d_model, std::int64_t heads,
                     std::int64_t feed_forward_size, TransformerLayerOptions options = {});
  std::string type_name() const override { return "TransformerDecoder"; }
  Tensor forward(const Tensor& target, const Tensor& memory,
                 const TransformerDecoderMasks& masks = {});

  // Incremental decoding, each step O(t) rather than a recomputation of the prefix:
  //   auto cache = decoder.start(memory, source_padding);
  //   for each t: states_t = decoder.step(y_t, cache);   // y_t [batch, 1, d_model]
  // states_t equals forward(y_0..y_t, memory, {.memory_padding_mask = source_padding}) at
  // position t.
  TransformerDecoderCache start(const Tensor& memory,
                                const Tensor& memory_padding_mask = Tensor()) const;
  Tensor step(const Tensor& target, TransformerDecoderCache& cache);
};

}  // namespace normgrad::nn
