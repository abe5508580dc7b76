#include "nn/losses.h"

#include <vector>

#include "autograd/functions/cross_entropy.h"
#include "autograd/ops.h"
#include "autograd/primitives.h"
#include "base/error.h"

namespace normgrad::nn {

namespace {

// Checks shapes and options; returns the class count C.
std::int64_t check(const Tensor& logits, const Tensor& targets, const CrossEntropyOptions& options,
                   const char* name) {
  NG_CHECK(logits.defined() && targets.defined(), name, "logits and targets must be defined");
  autograd::primitive::check_floating(logits, name);
  autograd::primitive::check_same_device(logits, targets, name);
  NG_CHECK(targets.dtype() == DType::Int64, name, "targets must be int64 class indices, got ",
           targets.dtype());
  NG_CHECK(logits.dim() >= 1 && logits.size(-1) > 0, name,
           "logits need a non-empty class dim last, got ", logits.shape());
  NG_CHECK(Shape(logits.shape().begin(), logits.shape().end() - 1) == targets.shape(), name,
           "targets of shape ", targets.shape(), " do not match logits of shape ", logits.shape(),
           " without its class dim");
  NG_CHECK(options.label_smoothing >= 0 && options.label_smoothing <= 1, name,
           "label_smoothing must lie in [0, 1], got ", options.label_smoothing);
  return logits.size(-1);
}

// The per-row losses and their mean over the rows that are not ignored, or their sum.
Tensor reduce(const Tensor& per_row, const Tensor& targets, const CrossEntropyOptions& options) {
  if (options.reduction == Reduction::None) return per_row;
  if (options.reduction == Reduction::Sum) return per_row.sum();
  // The count stays on the device: reading it back would make every GPU step wait here.
  const Tensor counted =
      ne(targets, static_cast<double>(options.ignore_index)).sum().to(per_row.dtype());
  return per_row.sum() / counted;  // 0 / 0 = NaN when every row is ignored, as PyTorch
}

}  // namespace

Tensor cross_entropy(const Tensor& logits, const Tensor& targets, CrossEntropyOptions options) {
  // bfloat16 logits are scored in float32: a log-normaliser rounded to 8 bits would move every
  // probability of the gradient by up to 2^-9 of the logits' size.
  if (logits.defined() && logits.dtype() == DType::BFloat16)
    return cross_entropy(logits.to(DType::Float32), targets, options);
  check(logits, targets, options, "cross_entropy");
  const Tensor losses =
      cross_entropy_rows(logits, targets, options.ignore_index, options.label_smoothing);
  return reduce(losses, targets, options);
}

Tensor cross_entropy_composed(const Tensor& logits, const Tensor& targets,
                              CrossEntropyOptions options) {
  check(logits, targets, options, "cross_entropy");
  const Tensor log_probabilities = logits.log_softmax(-1);
  // Ignored rows pick class 0 and are then masked out.
  const Tensor kept = ne(targets, static_cast<double>(options.ignore_index));
  const Tensor safe_targets = where(
      kept, targets, zeros(targets.shape(), {.dtype = DType::Int64, .device = targets.device()}));
  const Tensor picked = gather(log_probabilities, -1, safe_targets.unsqueeze(-1)).squeeze(-1);
  Tensor per_row = -picked * (1 - options.label_smoothing);
  if (options.label_smoothing != 0)
    per_row = per_row - log_probabilities.mean({-1}) * options.label_smoothing;
  return reduce(per_row * kept.to(logits.dtype()), targets, options);
}

Tensor nll_loss(const Tensor& log_probabilities, const Tensor& targets,
                CrossEntropyOptions options) {
  check(log_probabilities, targets, options, "nll_loss");
  NG_CHECK(options.label_smoothing == 0, "nll_loss",
           "label smoothing belongs to cross_entropy; got ", options.label_smoothing);
  const std::int64_t classes = log_probabilities.size(-1);
  const Tensor kept = ne(targets, static_cast<double>(options.ignore_index));
  const Tensor in_range = (ge(targets, 0.0) * lt(targets, static_cast<double>(classes)));
  NG_CHECK((kept - kept * in_range).sum().item() == 0, "nll_loss",
           "a target is not a class in [0, ", classes, ") nor the ignore_index ",
           options.ignore_index);
  const Tensor safe_targets = where(
      kept, targets, zeros(targets.shape(), {.dtype = DType::Int64, .device = targets.device()}));
  const Tensor picked = gather(log_probabilities, -1, safe_targets.unsqueeze(-1)).squeeze(-1);
  return reduce(-picked * kept.to(log_probabilities.dtype()), targets, options);
}

Tensor mse_loss(const Tensor& prediction, const Tensor& target) {
  NG_CHECK(prediction.defined() && target.defined(), "mse_loss", "inputs must be defined");
  NG_CHECK(prediction.shape() == target.shape(), "mse_loss", "prediction of shape ",
           prediction.shape(), " and target of shape ", target.shape(), " differ");
  return square(prediction - target).mean();
}

}  // namespace normgrad::nn
