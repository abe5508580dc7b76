#pragma once
// Launchers of indexing.cu. index_select, index_add, gather and scatter_add. The adding ones are
// deterministic: repeated indices add in order, without float atomics. Each takes what the Backend
// method of the same name takes (backends/backend.h documents the contract), after the device's
// Context; it queues its kernels on context.stream.

#include "backends/backend.h"
#include "backends/cuda/context.h"

namespace normgrad::backend::cuda {

void index_select(const Context& context, const TensorRef& out, const TensorRef& in, int dim,
                  const TensorRef& index);
void index_add(const Context& context, const TensorRef& out, int dim, const TensorRef& index,
               const TensorRef& src);
void gather(const Context& context, const TensorRef& out, const TensorRef& in, int dim,
            const TensorRef& index);
void scatter_add(const Context& context, const TensorRef& out, int dim, const TensorRef& index,
                 const TensorRef& src);

}  // namespace normgrad::backend::cuda
