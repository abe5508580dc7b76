#pragma once
// The cross_entropy family's differentiable op: softmax cross-entropy of each row as one fused
// backend kernel forward and one backward (the backend's cross_entropy_forward and
// cross_entropy_backward). With p = softmax(x) over a row's C logits, e the label smoothing and
// q = (1 - e) onehot(target) + e / C the target distribution (PyTorch's form),
//   loss = logsumexp(x) - sum_j q_j x_j,   dloss/dx = p - q,
// so forward keeps the log-normaliser logsumexp(x) and backward recomputes p from it, never
// storing the softmax. A row whose target is ignore_index has loss 0 and gradient 0.
// nn::cross_entropy (nn/losses.h) checks the operands, calls this and reduces the rows;
// nn::cross_entropy_composed is the same from log_softmax and gather, the twin the tests hold
// it to.

#include <cstdint>

#include "core/tensor.h"

namespace normgrad {

// logits [..., C] of a floating dtype; targets int64 [...], each in [0, C) or ignore_index (an
// Error names the first that is neither). Returns the loss of each row, [...].
Tensor cross_entropy_rows(const Tensor& logits, const Tensor& targets, std::int64_t ignore_index,
                          double label_smoothing);

}  // namespace normgrad
