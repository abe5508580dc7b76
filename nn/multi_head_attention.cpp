#include "nn/multi_head_attention.h"

#include "autograd/grad_mode.h"
#include "autograd/mixed_precision.h"
#include "autograd/ops.h"
#include "base/error.h"
#include "nn/functional.h"
#include "nn/init.h"
#include "profiler/recorder.h"

namespace normgrad::nn {

namespace {

constexpr const char* forward_op = "MultiHeadAttention::forward";
constexpr const char* cache_op = "MultiHeadAttention (cached keys and values)";

// Throws unless x is a [batch, length, d_model] tensor the layer takes: of the parameters'
// dtype, or bfloat16 for float32 parameters (mixed precision: the projections round the
// parameters, autograd/mixed_precision.h).
void check_cached_input(const Tensor& x, std::int64_t d_model, DType dtype, const char* what) {
  NG_CHECK(
      x.defined() && x.dim() == 3 && x.size(2) == d_model && takes_input_dtype(x.dtype(), dtype),
      cache_op, "expects ", what, " of shape [batch, length, ", d_model, "] and dtype ", dtype,
      dtype == DType::Float32 ? " (or bfloat16)" : "", ", got ", x.defined() ? x.shape() : Shape{},
      " and ", x.defined() ? x.dtype() : dtype);
}

// Each mask as 0/1, summed: nonzero wherever any of them blocks. Shapes broadcast to
// [batch, 1, query_len, key_len] (the heads share the masks). The causal mask is made on
// `device`, the queries'.
Tensor combined_mask(const AttentionMasks& masks, std::int64_t batch, std::int64_t query_len,
                     std::int64_t key_len, Device device) {
  detail::check_padding_mask(masks.key_padding_mask, batch, key_len, forward_op,
                             "key padding mask");
  if (masks.attention_mask.defined()) {
    const Tensor& mask = masks.attention_mask;
    NG_CHECK(mask.dtype() == DType::Int64, forward_op,
             "the attention mask must be int64 (nonzero where blocked), got ", mask.dtype());
    NG_CHECK(mask.dim() == 2 && mask.size(0) == query_len && mask.size(1) == key_len, forward_op,
             "the attention mask must have shape [query_len, key_len] = [", query_len, ", ",
             key_len, "], got ", mask.shape());
  }
  NG_CHECK(!masks.causal || query_len == key_len, forward_op,
           "a causal mask needs query_len == key_len, got ", query_len, " and ", key_len);

  NoGradGuard no_grad;
  Tensor blocked;
  const auto add_mask = [&blocked](const Tensor& mask) {
    const Tensor zero_one = ne(mask, 0.0);
    blocked = blocked.defined() ? blocked + zero_one : zero_one;
  };
  if (masks.key_padding_mask.defined())
    add_mask(masks.key_padding_mask.reshape({batch, 1, 1, key_len}));
  if (masks.attention_mask.defined()) add_mask(masks.attention_mask);
  if (masks.causal) add_mask(functional::causal_mask(query_len, device));
  return blocked;
}

}  // namespace

MultiHeadAttention::MultiHeadAttention(std::int64_t d_model, std::int64_t heads,
                                       MultiHeadAttentionOptions options)
    : d_model_(d_model), heads_(heads), options_(options) {
  NG_CHECK(d_model > 0 && heads > 0, "MultiHeadAttention",
           "d_model and heads must be positive, got ", d_model, " and ", heads);
  NG_CHECK(d_model % heads == 0, "MultiHeadAttention", "d_model ", d_model,
           " is not divisible by heads ", heads);
  NG_CHECK(options.dropout >= 0 && options.dropout <= 1, "MultiHeadAttention",
           "dropout must lie in [0, 1], got ", options.dropout);
  NG_CHECK(is_floating(options.dtype), "MultiHeadAttention", "expects a floating-point dtype, got ",
           options.dtype);
  const TensorOptions tensor_options{.dtype = options.dtype};
  in_proj_weight = register_parameter(
      "in_proj_weight", init::xavier_uniform_(zeros({3 * d_model, d_model}, tensor_options)));
  if (options.bias)
    in_proj_bias = register_parameter("in_proj_bias", zeros({3 * d_model}, tensor_options));
  out_proj = register_module(
      "out_proj",
      std::make_shared<Linear>(d_model, d_model,
                               LinearOptions{.bias = options.bias, .dtype = options.dtype}));
  if (options.bias) init::constant_(out_proj->bias, 0.0);
}

Tensor MultiHeadAttention::project(const Tensor& x, std::int64_t part) const {
  const Tensor weight = in_proj_weight.narrow(0, part * d_model_, d_model_);
  const Tensor bias =
      in_proj_bias.defined() ? in_proj_bias.narrow(0, part * d_model_, d_model_) : Tensor();
  const std::int64_t batch = x.size(0), length = x.size(1);
  return functional::linear(x, weight, bias)
      .reshape({batch, length, heads_, d_model_ / heads_})
      .transpose(1, 2);
}

AttentionOutput MultiHeadAttention::forward(const Tensor& query, const Tensor& key,
                                            const Tensor& value, const AttentionMasks& masks) {
  const profiler::ModuleSpan span(this, "MultiHeadAttention");

  NG_CHECK(query.defined() && key.defined() && value.defined(), forward_op,
           "query, key and value must all be defined");
  for (const Tensor* x : {&query, &key, &value})
    NG_CHECK(x->dim() == 3 && x->size(2) == d_model_, forward_op,
             "expects query, key and value of shape [batch, length, ", d_model_, "], got ",
             query.shape(), ", ", key.shape(), " and ", value.shape());
  NG_CHECK(query.size(0) == key.size(0) && query.size(0) == value.size(0), forward_op,
           "query, key and value must have the same batch size, got ", query.shape(), ", ",
           key.shape(), " and ", value.shape());
  NG_CHECK(key.size(1) == value.size(1), forward_op,
           "key and value must have the same length, got ", key.shape(), " and ", value.shape());
  for (const Tensor* x : {&query, &key, &value})
    NG_CHECK(takes_input_dtype(x->dtype(), in_proj_weight.dtype()), forward_op, "expects ",
             in_proj_weight.dtype(),
             " inputs like the layer's parameters (or bfloat16 for float32 ones), got ",
             query.dtype(), ", ", key.dtype(), " and ", value.dtype());
  const std::int64_t batch = query.size(0), query_len = query.size(1), key_len = key.size(1);
  const Tensor blocked = combined_mask(masks, batch, query_len, key_len, query.device());

  return attend_heads(project(query, 0), project(key, 1), project(value, 2), blocked);
}

AttentionOutput MultiHeadAttention::attend_heads(const Tensor& q, const Tensor& k, const Tensor& v,
                                                 const Tensor& blocked) {
  const double dropout = is_training() ? options_.dropout : 0.0;
  Generator& generator = options_.generator != nullptr ? *options_.generator : default_generator();
  const AttentionOutput heads =
      functional::scaled_dot_product_attention(q, k, v, blocked, dropout, generator);
  // [batch, heads, query_len, d_head] -> [batch, query_len, d_model]: the heads side by side.
  const Tensor joined = heads.output.transpose(1, 2).reshape({q.size(0), q.size(2), d_model_});
  return {out_proj->forward(joined), heads.weights};
}

KeyValueCache MultiHeadAttention::project_keys_values(const Tensor& key,
                                                      const Tensor& value) const {
  check_cached_input(key, d_model_, in_proj_weight.dtype(), "a key");
  check_cached_input(value, d_model_, in_proj_weight.dtype(), "a value");
  NG_CHECK(key.shape() == value.shape(), cache_op, "key and value must have the same shape, got ",
           key.shape(), " and ", value.shape());
  return {project(key, 1), project(value, 2)};
}

AttentionOutput MultiHeadAttention::attend(const Tensor& query, const KeyValueCache& cache,
                                           const Tensor& key_padding_mask) {
  NG_CHECK(cache.key.defined() && cache.value.defined(), cache_op,
           "the cache is empty: project keys and values, or take a step, first");
  check_cached_input(query, d_model_, in_proj_weight.dtype(), "a query");
  NG_CHECK(query.size(0) == cache.key.size(0), cache_op, "the query ", query.shape(),
           " and the cache (", cache.key.size(0), " rows) differ in batch size");
  const Tensor blocked = combined_mask({.key_padding_mask = key_padding_mask}, query.size(0),
                                       query.size(1), cache.length(), query.device());
  return attend_heads(project(query, 0), cache.key, cache.value, blocked);
}

AttentionOutput MultiHeadAttention::forward_step(const Tensor& query, KeyValueCache& cache) {
  check_cached_input(query, d_model_, in_proj_weight.dtype(), "a step");
  NG_CHECK(query.size(1) == 1, cache_op, "a step takes one position, [batch, 1, ", d_model_,
           "], got ", query.shape());
  NG_CHECK(!cache.key.defined() || cache.key.size(0) == query.size(0), cache_op, "the step ",
           query.shape(), " and the cache (", cache.key.size(0), " rows) differ in batch size");
  NG_CHECK(!cache.key.defined() || cache.key.dtype() == query.dtype(), cache_op, "a ",
           query.dtype(), " step cannot extend a cache of ", cache.key.dtype(), " keys");
  const Tensor key = project(query, 1), value = project(query, 2);
  cache.key = cache.key.defined() ? cat({cache.key, key}, 2) : key;
  cache.value = cache.value.defined() ? cat({cache.value, value}, 2) : value;
  return attend_heads(project(query, 0), cache.key, cache.value, Tensor());
}

void KeyValueCache::reorder(const Tensor& rows) {
  if (!key.defined()) return;
  key = index_select(key, 0, rows);
  value = index_select(value, 0, rows);
}

}  // namespace normgrad::nn
