#pragma once
// Launchers of im2col.cu. im2col and col2im for NCHW images with stride, padding and dilation;
// col2im gathers each pixel's taps in a fixed order (no atomics). Each takes what the Backend
// method of the same name takes (backends/backend.h documents the contract), after the device's
// Context; it queues its kernels on context.stream.

#include "backends/backend.h"
#include "backends/cuda/context.h"

namespace normgrad::backend::cuda {

void im2col(const Context& context, const TensorRef& columns, const TensorRef& image,
            const Window2d& window);
void col2im(const Context& context, const TensorRef& image, const TensorRef& columns,
            const Window2d& window);

}  // namespace normgrad::backend::cuda
