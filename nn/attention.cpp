#include "nn/attention.h"

#include <cmath>
#include <limits>

#include "autograd/grad_mode.h"
#include "autograd/ops.h"
#include "base/error.h"
#include "nn/dropout.h"

namespace normgrad::nn {

namespace {

// True when `from` broadcasts to exactly `to` (NumPy rules, aligned at the last dim).
bool broadcasts_to(const Shape& from, const Shape& to) {
  if (from.size() > to.size()) return false;
  const std::size_t lead = to.size() - from.size();
  for (std::size_t d = 0; d < from.size(); ++d)
    if (from[d] != 1 && from[d] != to[lead + d]) return false;
  return true;
}

double lowest_of(DType dtype) {
  switch (dtype) {
    case DType::Float32:
      return static_cast<double>(std::numeric_limits<float>::lowest());
    case DType::BFloat16:  // -0x1.fep127: float's lowest would round to -inf
      return -static_cast<double>(static_cast<float>(bfloat16::from_bits(0x7f7f)));
    default:
      return std::numeric_limits<double>::lowest();
  }
}

}  // namespace

namespace functional {

Tensor masked_softmax(const Tensor& scores, const Tensor& blocked) {
  NG_CHECK(scores.defined(), "masked_softmax", "the scores are undefined");
  NG_CHECK(is_floating(scores.dtype()), "masked_softmax", "expects floating-point scores, got ",
           scores.dtype());
  NG_CHECK(scores.dim() >= 1, "masked_softmax", "expects scores of at least 1 dim, got a scalar");
  if (!blocked.defined()) return softmax(scores, -1);
  NG_CHECK(blocked.dtype() == DType::Int64, "masked_softmax",
           "the mask must be int64 (nonzero where blocked), got ", blocked.dtype(),
           "; a floating-point mask is not added to the scores here");
  NG_CHECK(broadcasts_to(blocked.shape(), scores.shape()), "masked_softmax", "a mask of shape ",
           blocked.shape(), " does not broadcast to the scores' shape ", scores.shape());
  const Tensor weights = softmax(masked_fill(scores, blocked, lowest_of(scores.dtype())), -1);
  return masked_fill(weights, blocked, 0.0);
}

Tensor causal_mask(std::int64_t length, Device device) {
  NG_CHECK(length >= 0, "causal_mask", "length must be non-negative, got ", length);
  NoGradGuard no_grad;
  const Tensor positions =
      arange(static_cast<double>(length), {.dtype = DType::Int64, .device = device});
  // blocked[i, j] = j > i
  return gt(positions.unsqueeze(0), positions.unsqueeze(1));
}

AttentionOutput scaled_dot_product_attention(const Tensor& query, const Tensor& key,
                                             const Tensor& value, const Tensor& blocked,
                                             double dropout, Generator& generator) {
  const char* op = "scaled_dot_product_attention";
  NG_CHECK(query.defined() && key.defined() && value.defined(), op,
           "query, key and value must all be defined");
  NG_CHECK(query.dim() == 4 && key.dim() == 4 && value.dim() == 4, op,
           "expects query, key and value of shape [batch, heads, length, dim], got ", query.shape(),
           ", ", key.shape(), " and ", value.shape());
  NG_CHECK(
      is_floating(query.dtype()) && query.dtype() == key.dtype() && query.dtype() == value.dtype(),
      op, "query, key and value must share one floating-point dtype, got ", query.dtype(), ", ",
      key.dtype(), " and ", value.dtype());
  NG_CHECK(query.size(0) == key.size(0) && query.size(0) == value.size(0) &&
               query.size(1) == key.size(1) && query.size(1) == value.size(1),
           op, "query, key and value must agree in batch and heads, got ", query.shape(), ", ",
           key.shape(), " and ", value.shape());
  NG_CHECK(query.size(3) == key.size(3), op, "query and key must have the same last dim, got ",
           query.shape(), " and ", key.shape());
  NG_CHECK(key.size(2) == value.size(2), op, "key and value must have the same length, got ",
           key.shape(), " and ", value.shape());
  NG_CHECK(dropout >= 0 && dropout <= 1, op, "dropout must lie in [0, 1], got ", dropout);

  const double scale = 1.0 / std::sqrt(static_cast<double>(query.size(3)));
  // scores[b, h, i, j] = q_i . k_j / sqrt(d)
  const Tensor scores = matmul(query, key.transpose(2, 3)) * scale;
  if (blocked.defined())
    NG_CHECK(blocked.dtype() == DType::Int64 && broadcasts_to(blocked.shape(), scores.shape()), op,
             "the mask must be int64 and broadcast to [batch, heads, query_len, key_len] = ",
             scores.shape(), ", got ", blocked.dtype(), " of shape ", blocked.shape());
  const Tensor weights = masked_softmax(scores, blocked);
  const Tensor kept = functional::dropout(weights, dropout, dropout > 0, generator);
  return {matmul(kept, value), weights};
}

}  // namespace functional

namespace detail {

Tensor normalise_features(Layer& norm, const Tensor& x) {
  if (x.dim() <= 2) return norm.forward(x);
  return norm.forward(x.reshape({-1, x.size(-1)})).reshape(x.shape());
}

void check_padding_mask(const Tensor& mask, std::int64_t batch, std::int64_t length, const char* op,
                        const char* what) {
  if (!mask.defined()) return;
  NG_CHECK(mask.dtype() == DType::Int64, op, "the ", what,
           " must be int64 (nonzero at padded positions), got ", mask.dtype());
  NG_CHECK(mask.dim() == 2 && mask.size(0) == batch && mask.size(1) == length, op, "the ", what,
           " must have shape [batch, length] = [", batch, ", ", length, "], got ", mask.shape());
}

}  // namespace detail

}  // namespace normgrad::nn
