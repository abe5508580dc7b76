#pragma once
// The process group's collectives on CUDA tensors, through NCCL (distributed/nccl_*.cpp; a
// build without NCCL has no_nccl.cpp, where nothing is available). Called by the MPI process
// group, which passes NCCL's unique id between the ranks and wraps each call in a Work.
//
// Each call queues the collective on the tensor's device stream, after the work already
// queued there (which computed the tensor), and returns a test that says, without blocking,
// whether it has finished.

#include <functional>

#include "core/tensor.h"

namespace normgrad::distributed {
class ProcessGroup;
}

namespace normgrad::distributed::nccl {

bool available();

using Test = std::function<bool()>;

Test all_reduce(const ProcessGroup& group, const Tensor& tensor, bool mean);
Test broadcast(const ProcessGroup& group, const Tensor& tensor, int root);
Test all_gather(const ProcessGroup& group, const Tensor& input, const Tensor& output);

}  // namespace normgrad::distributed::nccl
