#pragma once
// Launchers of implicit_conv.cu: conv2d (backend.h's contract, bias optional) and its weight
// gradient as kernels that gather im2col's columns tile by tile into shared memory instead of
// writing them out. Each queues its kernels on context.stream.

#include "backends/backend.h"
#include "backends/cuda/context.h"

namespace normgrad::backend::cuda {

void conv2d_implicit_gemm(const Context& context, const TensorRef& y, const TensorRef& x,
                          const TensorRef& weight, const TensorRef* bias, const Window2d& window);
// conv2d_weight_gradient (backend.h): dW = dY X^T over the outputs split into shares whose
// 64 x 64 tiles run side by side, the shares' partial sums then added in order.
void conv2d_weight_gradient_implicit_gemm(const Context& context, const TensorRef& dw,
                                          const TensorRef& x, const TensorRef& dy,
                                          const Window2d& window);

}  // namespace normgrad::backend::cuda
