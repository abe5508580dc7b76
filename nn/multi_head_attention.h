#pragma once
// MultiHeadAttention (Vaswani et al. 2017), parameterised as torch.nn.MultiheadAttention with
// batch_first=True, so PyTorch's weights load by name:
//
//   Q = query W_q^T + b_q,  K = key W_k^T + b_k,  V = value W_v^T + b_v
//   head_h = softmax(Q_h K_h^T / sqrt(d_head)) V_h       (each head sees d_head = d_model / heads
//                                                          consecutive features of Q, K, V)
//   output = concat(head_1, ..., head_H) W_o^T + b_o
//
// in_proj_weight is [W_q; W_k; W_v] stacked, [3 d_model, d_model], in_proj_bias [3 d_model],
// out_proj a Linear(d_model, d_model). Initialised as PyTorch does: in_proj_weight
// Xavier-uniform, out_proj.weight U(-1/sqrt(d_model), 1/sqrt(d_model)), both biases zero,
// drawing from the default generator as Linear does.
//
// query [batch, query_len, d_model], key and value [batch, key_len, d_model]: self-attention
// passes one tensor three times, cross-attention the decoder's states as the query and the
// encoder's as key and value. Masks (int64, nonzero = blocked, see attention.h):
//   key_padding_mask  [batch, key_len]        padded keys
//   attention_mask    [query_len, key_len]    any per-position pattern
//   causal            query i attends to keys j <= i (needs query_len == key_len)
// They combine: a position blocked by any is blocked. The returned weights are per head,
// [batch, heads, query_len, key_len] (PyTorch's average_attn_weights=False), and are the
// weights before dropout: in training, dropout (if any) acts only on the copy that multiplies
// the values. Where every key of a query is blocked PyTorch gives NaN; here that query reads
// zeros, so its output is out_proj's bias.

#include <cstdint>
#include <memory>

#include "core/generator.h"
#include "nn/attention.h"
#include "nn/linear.h"
#include "nn/module.h"

namespace normgrad::nn {

struct MultiHeadAttentionOptions {
  double dropout = 0.0;  // on the attention weights, in training
  bool bias = true;      // in_proj_bias and out_proj.bias
  DType dtype = DType::Float32;
  Generator* generator = nullptr;  // for the dropout masks; the default generator if null
};

// Keys and values projected and split into heads, [batch, heads, length, d_head], for decoding
// one position at a time: a decoder's self-attention cache grows by a position a step, and a
// cross-attention's holds the encoder's output, projected once instead of at every step.
struct KeyValueCache {
  Tensor key, value;
  std::int64_t length() const { return key.defined() ? key.size(2) : 0; }
  // Row i becomes old row rows[i] (int64 [new_rows]; rows may repeat or be left out), as a
  // beam search reorders its hypotheses.
  void reorder(const Tensor& rows);
};

struct AttentionMasks {
  Tensor key_padding_mask{};  // [batch, key_len]
  Tensor attention_mask{};    // [query_len, key_len]
  bool causal = false;
};

class MultiHeadAttention : public Module {
 public:
  Tensor in_proj_weight;  // [3 d_model, d_model]
  Tensor in_proj_bias;    // [3 d_model]; undefined without bias
  std::shared_ptr<Linear> out_proj;

  MultiHeadAttention(std::int64_t d_model, std::int64_t heads,
                     MultiHeadAttentionOptions options = {});
  std::string type_name() const override { return "MultiHeadAttention"; }

  // output [batch, query_len, d_model], weights [batch, heads, query_len, key_len].
  AttentionOutput forward(const Tensor& query, const Tensor& key, const Tensor& value,
                          const AttentionMasks& masks = {});

  // Decoding a position at a time. project_keys_values(key, value) projects them once for
  // attend(query, cache), which is forward(query, key, value, {.key_padding_mask}). And
  // forward_step(x_t, cache), with x_t [batch, 1, d_model] the next position of a sequence x
  // whose earlier positions the cache has seen, appends x_t's key and value to the cache and
  // returns the last position of forward(x, x, x, {.causal = true}), at the cost of one
  // position rather than of all t.
  KeyValueCache project_keys_values(const Tensor& key, const Tensor& value) const;
  AttentionOutput attend(const Tensor& query, const KeyValueCache& cache,
                         const Tensor& key_padding_mask = Tensor());
  AttentionOutput forward_step(const Tensor& query, KeyValueCache& cache);

  std::int64_t d_model() const { return d_model_; }
  std::int64_t heads() const { return heads_; }

 private:
  // x [batch, len, d_model] through rows [part d_model, (part + 1) d_model) of the packed
  // projection, split into heads: [batch, heads, len, d_head].
  Tensor project(const Tensor& x, std::int64_t part) const;
  // The heads of projected q, k, v [batch, heads, len, d_head] attending, joined and through
  // out_proj.
  AttentionOutput attend_heads(const Tensor& q, const Tensor& k, const Tensor& v,
                               const Tensor& blocked);

  std::int64_t d_model_, heads_;
  MultiHeadAttentionOptions options_;
};

}  // namespace normgrad::nn
