#pragma once
// Launchers of matmul.cu. Batched matrix products through cuBLAS (strided-batched GEMM); float32
// may use TF32 tensor cores when tf32_allowed(). Each takes what the Backend method of
// the same name takes (backends/backend.h documents the contract), after the device's Context; it
// queues its kernels on context.stream.

#include "backends/backend.h"
#include "backends/cuda/context.h"

namespace normgrad::backend::cuda {

void matmul(const Context& context, const TensorRef& out, const TensorRef& a, const TensorRef& b,
            bool accumulate);

}  // namespace normgrad::backend::cuda
