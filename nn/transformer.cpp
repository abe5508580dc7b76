#include "nn/transformer.h"

#include <string>

#include "autograd/ops.h"
#include "base/error.h"
#include "nn/dropout.h"
#include "profiler/recorder.h"

namespace normgrad::nn {

namespace {

void check_options(const TransformerLayerOptions& options, std::int64_t d_model, std::int64_t heads,
                   std::int64_t feed_forward_size, const char* op) {
  NG_CHECK(d_model > 0 && heads > 0 && feed_forward_size > 0, op,
           "d_model, heads and feed_forward_size must be positive, got ", d_model, ", ", heads,
           " and ", feed_forward_size);
  NG_CHECK(d_model % heads == 0, op, "d_model ", d_model, " is not divisible by heads ", heads);
  NG_CHECK(options.dropout >= 0 && options.dropout <= 1, op, "dropout must lie in [0, 1], got ",
           options.dropout);
  NG_CHECK(!options.norm.reparameterises_weight(), op, "norm \"", options.norm.str(),
           "\" reparameterises weights; the Transformer layers take an activation normaliser "
           "(none, layernorm, rmsnorm, prmsnorm, l2norm, batchnorm)");
}

void check_sequence(const Tensor& x, std::int64_t d_model, const char* op, const char* what) {
  NG_CHECK(x.defined(), op, "the ", what, " is undefined");
  NG_CHECK(x.dim() == 3 && x.size(2) == d_model, op, "expects the ", what,
           " of shape [batch, len, ", d_model, "], got ", x.shape());
}

std::shared_ptr<MultiHeadAttention> make_attention(std::int64_t d_model, std::int64_t heads,
                                                   const TransformerLayerOptions& options) {
  return std::make_shared<MultiHeadAttention>(
      d_model, heads,
      MultiHeadAttentionOptions{
          .dropout = options.dropout, .dtype = options.dtype, .generator = options.generator});
}

std::shared_ptr<Linear> make_linear(std::int64_t in, std::int64_t out, DType dtype) {
  return std::make_shared<Linear>(in, out, LinearOptions{.dtype = dtype});
}

// What every layer of the stacks does around its sublayers.
struct Sublayers {
  const TransformerLayerOptions& options;
  bool training;

  Tensor dropout(const Tensor& x) const {
    Generator& generator = options.generator != nullptr ? *options.generator : default_generator();
    return functional::dropout(x, options.dropout, training, generator);
  }

  // W_2 Dropout(act(W_1 x + b_1)) + b_2
  Tensor feed_forward(Linear& linear1, Linear& linear2, const Tensor& x) const {
    const Tensor hidden = linear1.forward(x);
    const Tensor activated =
        options.activation == FeedForwardActivation::GELU ? gelu(hidden) : relu(hidden);
    return linear2.forward(dropout(activated));
  }

  // Post-norm: Norm(x + Dropout(F(x))). Pre-norm: x + Dropout(F(Norm(x))).
  template <typename Sublayer>
  Tensor residual(Norm& norm, const Tensor& x, Sublayer&& sublayer) const {
    if (options.placement == NormPlacement::Pre)
      return x + dropout(sublayer(detail::normalise_features(norm, x)));
    return detail::normalise_features(norm, x + dropout(sublayer(x)));
  }
};

// The container that names a stack's layers "0", "1", ... under "layers".
class LayerList : public Module {
 public:
  std::string type_name() const override { return "LayerList"; }
  void push_back(std::shared_ptr<Module> layer) {
    register_module(std::to_string(size_++), std::move(layer));
  }

 private:
  std::size_t size_ = 0;
};

}  // namespace

// ---- encoder layer ----------------------------------------------------------------------------

TransformerEncoderLayer::TransformerEncoderLayer(std::int64_t d_model, std::int64_t heads,
                                                 std::int64_t feed_forward_size,
                                                 TransformerLayerOptions options)
    : options_(options) {
  check_options(options, d_model, heads, feed_forward_size, "TransformerEncoderLayer");
  self_attention = register_module("self_attention", make_attention(d_model, heads, options));
  linear1 = register_module("linear1", make_linear(d_model, feed_forward_size, options.dtype));
  linear2 = register_module("linear2", make_linear(feed_forward_size, d_model, options.dtype));
  norm1 = register_module("norm1",
                          make_norm(options.norm, d_model, NormLayout::Features, options.dtype));
  norm2 = register_module("norm2",
                          make_norm(options.norm, d_model, NormLayout::Features, options.dtype));
}

Tensor TransformerEncoderLayer::forward(const Tensor& x) { return forward(x, Tensor()); }

Tensor TransformerEncoderLayer::forward(const Tensor& x, const Tensor& padding_mask) {
  const profiler::ModuleSpan span(this, "TransformerEncoderLayer");

  check_sequence(x, self_attention->d_model(), "TransformerEncoderLayer", "input");
  const Sublayers sub{options_, is_training()};
  const AttentionMasks masks{.key_padding_mask = padding_mask};
  Tensor h = sub.residual(*norm1, x, [&](const Tensor& in) {
    return self_attention->forward(in, in, in, masks).output;
  });
  return sub.residual(*norm2, h,
                      [&](const Tensor& in) { return sub.feed_forward(*linear1, *linear2, in); });
}

// ---- decoder layer ----------------------------------------------------------------------------

TransformerDecoderLayer::TransformerDecoderLayer(std::int64_t d_model, std::int64_t heads,
                                                 std::int64_t feed_forward_size,
                                                 TransformerLayerOptions options)
    : options_(options) {
  check_options(options, d_model, heads, feed_forward_size, "TransformerDecoderLayer");
  self_attention = register_module("self_attention", make_attention(d_model, heads, options));
  cross_attention = register_module("cross_attention", make_attention(d_model, heads, options));
  linear1 = register_module("linear1", make_linear(d_model, feed_forward_size, options.dtype));
  linear2 = register_module("linear2", make_linear(feed_forward_size, d_model, options.dtype));
  norm1 = register_module("norm1",
                          make_norm(options.norm, d_model, NormLayout::Features, options.dtype));
  norm2 = register_module("norm2",
                          make_norm(options.norm, d_model, NormLayout::Features, options.dtype));
  norm3 = register_module("norm3",
                          make_norm(options.norm, d_model, NormLayout::Features, options.dtype));
}

Tensor TransformerDecoderLayer::forward(const Tensor& target, const Tensor& memory,
                                        const TransformerDecoderMasks& masks) {
  const profiler::ModuleSpan span(this, "TransformerDecoderLayer");

  const char* op = "TransformerDecoderLayer";
  const std::int64_t d_model = self_attention->d_model();
  check_sequence(target, d_model, op, "target");
  check_sequence(memory, d_model, op, "memory");
  NG_CHECK(target.size(0) == memory.size(0), op,
           "target and memory must have the same batch size, got ", target.shape(), " and ",
           memory.shape());
  const Sublayers sub{options_, is_training()};
  const AttentionMasks self_masks{.key_padding_mask = masks.target_padding_mask,
                                  .causal = masks.causal};
  const AttentionMasks cross_masks{.key_padding_mask = masks.memory_padding_mask};
  Tensor h = sub.residual(*norm1, target, [&](const Tensor& in) {
    return self_attention->forward(in, in, in, self_masks).output;
  });
  h = sub.residual(*norm2, h, [&](const Tensor& in) {
    return cross_attention->forward(in, memory, memory, cross_masks).output;
  });
  return sub.residual(*norm3, h,
                      [&](const Tensor& in) { return sub.feed_forward(*linear1, *linear2, in); });
}

TransformerDecoderLayerCache TransformerDecoderLayer::start(const Tensor& memory) const {
  check_sequence(memory, cross_attention->d_model(), "TransformerDecoderLayer::start", "memory");
  return {KeyValueCache{}, cross_attention->project_keys_values(memory, memory)};
}

// forward() for one position: the self-attention sees the cached positions and this one, so
// no causal mask is needed.
Tensor TransformerDecoderLayer::step(const Tensor& target, TransformerDecoderLayerCache& cache,
                                     const Tensor& memory_padding_mask) {
  const Sublayers sub{options_, is_training()};
  Tensor h = sub.residual(*norm1, target, [&](const Tensor& in) {
    return self_attention->forward_step(in, cache.self).output;
  });
  h = sub.residual(*norm2, h, [&](const Tensor& in) {
    return cross_attention->attend(in, cache.memory, memory_padding_mask).output;
  });
  return sub.residual(*norm3, h,
                      [&](const Tensor& in) { return sub.feed_forward(*linear1, *linear2, in); });
}

void TransformerDecoderCache::reorder(const Tensor& rows) {
  for (TransformerDecoderLayerCache& layer : layers) {
    layer.self.reorder(rows);
    layer.memory.reorder(rows);
  }
  if (memory_padding_mask.defined())
    memory_padding_mask = index_select(memory_padding_mask, 0, rows);
}

// ---- stacks -----------------------------------------------------------------------------------

namespace {

// A stack's layers, also collected in a LayerList for registering as layers.0, layers.1, ...
template <typename Layer>
std::shared_ptr<LayerList> make_layers(const char* op, std::vector<std::shared_ptr<Layer>>& layers,
                                       std::int64_t num_layers, std::int64_t d_model,
                                       std::int64_t heads, std::int64_t feed_forward_size,
                                       const TransformerLayerOptions& options) {
  NG_CHECK(num_layers > 0, op, "num_layers must be positive, got ", num_layers);
  auto list = std::make_shared<LayerList>();
  for (std::int64_t i = 0; i < num_layers; ++i) {
    layers.push_back(std::make_shared<Layer>(d_model, heads, feed_forward_size, options));
    list->push_back(layers.back());
  }
  return list;
}

// A pre-norm stack ends in a norm, since its last layer's output is not normalised; a
// post-norm one needs none (null).
std::shared_ptr<Norm> make_final_norm(const TransformerLayerOptions& options,
                                      std::int64_t d_model) {
  if (options.placement != NormPlacement::Pre) return nullptr;
  return make_norm(options.norm, d_model, NormLayout::Features, options.dtype);
}

}  // namespace

TransformerEncoder::TransformerEncoder(std::int64_t num_layers, std::int64_t d_model,
                                       std::int64_t heads, std::int64_t feed_forward_size,
                                       TransformerLayerOptions options) {
  register_module("layers", make_layers("TransformerEncoder", layers, num_layers, d_model, heads,
                                        feed_forward_size, options));
  if (auto norm = make_final_norm(options, d_model))
    final_norm = register_module("final_norm", norm);
}

Tensor TransformerEncoder::forward(const Tensor& x, const Tensor& padding_mask) {
  const profiler::ModuleSpan span(this, "TransformerEncoder");

  Tensor h = x;
  for (const auto& layer : layers) h = layer->forward(h, padding_mask);
  return final_norm ? detail::normalise_features(*final_norm, h) : h;
}

TransformerDecoder::TransformerDecoder(std::int64_t num_layers, std::int64_t d_model,
                                       std::int64_t heads, std::int64_t feed_forward_size,
                                       TransformerLayerOptions options) {
  register_module("layers", make_layers("TransformerDecoder", layers, num_layers, d_model, heads,
                                        feed_forward_size, options));
  if (auto norm = make_final_norm(options, d_model))
    final_norm = register_module("final_norm", norm);
}

Tensor TransformerDecoder::forward(const Tensor& target, const Tensor& memory,
                                   const TransformerDecoderMasks& masks) {
  const profiler::ModuleSpan span(this, "TransformerDecoder");

  Tensor h = target;
  for (const auto& layer : layers) h = layer->forward(h, memory, masks);
  return final_norm ? detail::normalise_features(*final_norm, h) : h;
}

TransformerDecoderCache TransformerDecoder::start(const Tensor& memory,
                                                  const Tensor& memory_padding_mask) const {
  TransformerDecoderCache cache;
  cache.memory_padding_mask = memory_padding_mask;
  for (const auto& layer : layers) cache.layers.push_back(layer->start(memory));
  return cache;
}

Tensor TransformerDecoder::step(const Tensor& target, TransformerDecoderCache& cache) {
  NG_CHECK(cache.layers.size() == layers.size(), "TransformerDecoder::step", "the cache has ",
           cache.layers.size(), " layers, the decoder ", layers.size(),
           ": start() makes a decoder's cache");
  Tensor h = target;
  for (std::size_t i = 0; i < layers.size(); ++i)
    h = layers[i]->step(h, cache.layers[i], cache.memory_padding_mask);
  return final_norm ? detail::normalise_features(*final_norm, h) : h;
}

}  // namespace normgrad::nn
