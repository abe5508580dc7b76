#include "nn/additive_attention.h"

#include "autograd/mixed_precision.h"
#include "autograd/ops.h"
#include "base/error.h"
#include "nn/functional.h"
#include "nn/init.h"
#include "profiler/recorder.h"

namespace normgrad::nn {

namespace {

// Nematus's norm_weight: orthogonal when square, else N(0, 0.01^2).
Tensor nematus_weight(std::int64_t rows, std::int64_t columns, DType dtype) {
  Tensor weight = zeros({rows, columns}, {.dtype = dtype});
  if (rows == columns) return init::orthogonal_(weight);
  return init::normal_(weight, 0.0, 0.01);
}

}  // namespace

AdditiveAttention::AdditiveAttention(std::int64_t context_size, std::int64_t query_size,
                                     std::int64_t attention_size, AdditiveAttentionOptions options)
    : context_size_(context_size), query_size_(query_size), attention_size_(attention_size) {
  NG_CHECK(context_size > 0 && query_size > 0 && attention_size > 0, "AdditiveAttention",
           "context_size, query_size and attention_size must be positive, got ", context_size, ", ",
           query_size, " and ", attention_size);
  NG_CHECK(is_floating(options.dtype), "AdditiveAttention", "expects a floating-point dtype, got ",
           options.dtype);
  const Tensor initial_context_weight = nematus_weight(attention_size, context_size, options.dtype);
  const Tensor initial_query_weight = nematus_weight(attention_size, query_size, options.dtype);
  if (options.norm.reparameterises_weight()) {
    context_weight_norm =
        register_module("context_weight", std::make_shared<WeightNorm>(initial_context_weight));
    query_weight_norm =
        register_module("query_weight", std::make_shared<WeightNorm>(initial_query_weight));
  } else {
    context_weight = register_parameter("context_weight", initial_context_weight);
    query_weight = register_parameter("query_weight", initial_query_weight);
  }
  context_bias =
      register_parameter("context_bias", zeros({attention_size}, {.dtype = options.dtype}));
  score_weight = register_parameter(
      "score_weight", init::normal_(zeros({attention_size}, {.dtype = options.dtype}), 0.0, 0.01));
  context_norm = register_module(
      "context_norm", make_norm(options.norm, attention_size, NormLayout::Features, options.dtype));
  query_norm = register_module(
      "query_norm", make_norm(options.norm, attention_size, NormLayout::Features, options.dtype));
}

Tensor AdditiveAttention::effective_context_weight() const {
  return context_weight_norm ? context_weight_norm->weight() : context_weight;
}

Tensor AdditiveAttention::effective_query_weight() const {
  return query_weight_norm ? query_weight_norm->weight() : query_weight;
}

AdditiveAttention::ProjectedContext AdditiveAttention::project_context(const Tensor& context,
                                                                       const Tensor& padding_mask) {
  const char* op = "AdditiveAttention::project_context";
  NG_CHECK(context.defined(), op, "the context is undefined");
  NG_CHECK(context.dim() == 3 && context.size(2) == context_size_, op,
           "expects a context of shape [batch, source_len, ", context_size_, "], got ",
           context.shape());
  NG_CHECK(takes_input_dtype(context.dtype(), context_bias.dtype()), op, "the context is ",
           context.dtype(), " but the layer's parameters are ", context_bias.dtype());
  detail::check_padding_mask(padding_mask, context.size(0), context.size(1), op, "padding mask");
  const Tensor projected =
      functional::linear(context, in_input_dtype(effective_context_weight(), context),
                         in_input_dtype(context_bias, context));
  return {context, detail::normalise_features(*context_norm, projected), padding_mask};
}

AttentionOutput AdditiveAttention::attend(const ProjectedContext& source, const Tensor& query) {
  const char* op = "AdditiveAttention::attend";
  NG_CHECK(source.projected.defined(), op,
           "the source is empty: prepare it with project_context first");
  NG_CHECK(query.defined(), op, "the query is undefined");
  const std::int64_t batch = source.context.size(0);
  NG_CHECK((query.dim() == 2 || query.dim() == 3) && query.size(0) == batch &&
               query.size(-1) == query_size_,
           op, "expects a query of shape [", batch, ", ", query_size_, "] or [", batch, ", steps, ",
           query_size_, "], got ", query.shape());
  NG_CHECK(query.dtype() == source.projected.dtype(), op, "the query is ", query.dtype(),
           " but the projected context is ", source.projected.dtype());
  const bool one_step = query.dim() == 2;
  const Tensor queries = one_step ? query.unsqueeze(1) : query;  // [B, T, Q]

  // hidden[b, t, j] = tanh(N1(U_c C_j + b) + N2(W_s s_t)): [B, T, S, A]
  const Tensor from_query = detail::normalise_features(
      *query_norm, functional::linear(queries, in_input_dtype(effective_query_weight(), queries)));
  const Tensor hidden = tanh(source.projected.unsqueeze(1) + from_query.unsqueeze(2));
  const Tensor scores = matmul(hidden, in_input_dtype(score_weight, hidden));  // [B, T, S]
  const Tensor blocked =
      source.padding_mask.defined() ? source.padding_mask.unsqueeze(1) : Tensor();
  const Tensor weights = functional::masked_softmax(scores, blocked);
  const Tensor output = matmul(weights, source.context);  // [B, T, C]
  if (one_step) return {output.squeeze(1), weights.squeeze(1)};
  return {output, weights};
}

AttentionOutput AdditiveAttention::forward(const Tensor& context, const Tensor& query,
                                           const Tensor& padding_mask) {
  const profiler::ModuleSpan span(this, "AdditiveAttention");

  return attend(project_context(context, padding_mask), query);
}

}  // namespace normgrad::nn
