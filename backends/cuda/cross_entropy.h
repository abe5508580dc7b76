#pragma once
// Launchers of cross_entropy.cu. Softmax cross-entropy per row, fused forward and backward (the
// softmax is recomputed from the saved log-sum-exp). Each takes what the Backend method of the same
// name takes (backends/backend.h documents the contract), after the device's Context; it queues its
// kernels on context.stream.

#include "backends/backend.h"
#include "backends/cuda/context.h"

namespace normgrad::backend::cuda {

void cross_entropy_forward(const Context& context, const CrossEntropyParams& params,
                           const TensorRef& loss, const TensorRef& log_normaliser,
                           const TensorRef& logits, const TensorRef& targets);
void cross_entropy_backward(const Context& context, const CrossEntropyParams& params,
                            const TensorRef& dlogits, const TensorRef& dloss,
                            const TensorRef& logits, const TensorRef& targets,
                            const TensorRef& log_normaliser);

}  // namespace normgrad::backend::cuda
