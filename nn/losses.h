#pragma once
// Losses, all in nn:: and named as torch.nn.functional names them (the ranking losses of order
// embeddings are in ranking_losses.h). Logits and log-probabilities have classes in their last
// dim, [..., C]; targets are int64 class indices of the leading shape [...].
//
// cross_entropy is fused (autograd/functions/cross_entropy.h: one backend pass forward, the
// log-sum-exp and the loss per row, and one backward, softmax minus the target distribution),
// with label smoothing in PyTorch's form (target distribution (1 - e) onehot + e / C) and an
// ignore_index whose rows count for nothing: no loss, no gradient, and not in the mean's
// denominator. cross_entropy_composed is the same from log_softmax and gather, the twin the
// tests hold it to.

#include <cstdint>

#include "core/tensor.h"

namespace normgrad::nn {

enum class Reduction { Mean, Sum, None };

struct CrossEntropyOptions {
  std::int64_t ignore_index = -100;
  double label_smoothing = 0.0;  // in [0, 1]
  Reduction reduction = Reduction::Mean;
};

Tensor cross_entropy(const Tensor& logits, const Tensor& targets, CrossEntropyOptions options = {});
Tensor cross_entropy_composed(const Tensor& logits, const Tensor& targets,
                              CrossEntropyOptions options = {});
// The negative log-likelihood of log-probabilities (label_smoothing must be 0).
Tensor nll_loss(const Tensor& log_probabilities, const Tensor& targets,
                CrossEntropyOptions options = {});

// mean((prediction - target)^2); the shapes must match.
Tensor mse_loss(const Tensor& prediction, const Tensor& target);

}  // namespace normgrad::nn
