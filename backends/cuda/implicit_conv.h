#pragma once
// Launcher of implicit_conv.cu: conv2d (backend.h's contract, bias optional) as one kernel that
// gathers im2col's columns tile by tile into shared memory instead of writing them out. It
// queues its kernel on context.stream.

#include "backends/backend.h"
#include "backends/cuda/context.h"

namespace normgrad::backend::cuda {

void conv2d_implicit_gemm(const Context& context, const TensorRef& y, const TensorRef& x,
                          const TensorRef& weight, const TensorRef* bias, const Window2d& window);

}  // namespace normgrad::backend::cuda
