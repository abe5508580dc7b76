#pragma once
// What the attention layers share: masks, the masked softmax, and scaled dot-product
// attention as a function (Vaswani et al. 2017). The layers are in additive_attention.h
// (Bahdanau / Nematus) and multi_head_attention.h.
//
// Masks. There is no bool dtype, so a mask is an int64 tensor, nonzero where attention is
// blocked (a padded key, a future position) and zero where it is allowed: the meaning of
// PyTorch's bool masks, where true means "do not attend". A floating-point mask is refused
// rather than read, because PyTorch adds floating-point masks to the scores, and silently
// reading one as blocked/allowed would be a different model.
//
// Blocked positions get a weight of exactly zero, and a row whose positions are all blocked
// (a query with nothing to look at) gets all-zero weights, hence a zero output and no gradient,
// instead of the NaN that 0/0 would give.

#include <cstdint>

#include "core/generator.h"
#include "core/tensor.h"
#include "nn/layer.h"

namespace normgrad::nn {

// What an attention layer returns: the attended values and the weights that produced them.
struct AttentionOutput {
  Tensor output;   // one attended vector per query
  Tensor weights;  // per query, a distribution over the keys (before any dropout)
};

namespace functional {

// softmax(scores) along the last dim, with weight exactly 0 wherever `blocked` (int64,
// broadcastable to scores' shape) is nonzero, and all-zero rows where every position is
// blocked. An undefined mask gives the plain softmax.
//   w = softmax(masked_fill(scores, blocked, lowest)),  then  w = masked_fill(w, blocked, 0)
// The fill is the dtype's lowest finite value, not -inf: a fully blocked row then holds equal
// finite scores, so its softmax is uniform rather than NaN before the second fill zeroes it;
// exp(lowest - max) underflows to 0 elsewhere, so the unblocked weights are the softmax over
// the unblocked scores alone. The gradient reaches only unblocked scores.
Tensor masked_softmax(const Tensor& scores, const Tensor& blocked = Tensor());

// [length, length] int64, 1 above the diagonal: query i may attend to keys j <= i.
Tensor causal_mask(std::int64_t length, Device device = Device::cpu());

// softmax(q k^T / sqrt(d)) v on q [batch, heads, query_len, d], k [batch, heads, key_len, d],
// v [batch, heads, key_len, d_v]; `blocked` (int64) broadcasts to [batch, heads, query_len,
// key_len]. Returns output [batch, heads, query_len, d_v] and weights [batch, heads,
// query_len, key_len]. With dropout > 0, inverted dropout is applied to the weights before
// they multiply v (the returned weights are the ones before dropout); pass 0 in evaluation.
AttentionOutput scaled_dot_product_attention(const Tensor& query, const Tensor& key,
                                             const Tensor& value, const Tensor& blocked = Tensor(),
                                             double dropout = 0.0,
                                             Generator& generator = default_generator());

}  // namespace functional

namespace detail {
// norm(x) for x [..., features], with the leading dims flattened into one batch dim first:
// the feature normalisers treat each row alike either way, and BatchNorm1d then takes its
// statistics over every position (padded ones included) instead of reading the second dim
// as channels.
Tensor normalise_features(Layer& norm, const Tensor& x);

// Checks that a padding mask is int64 of shape [batch, length]; `op` and `what` name the
// caller and the mask in the message. An undefined mask passes.
void check_padding_mask(const Tensor& mask, std::int64_t batch, std::int64_t length, const char* op,
                        const char* what);
}  // namespace detail

}  // namespace normgrad::nn
