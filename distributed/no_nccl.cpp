// Collectives on CUDA tensors in a build without NCCL: none. The process group refuses CUDA
// tensors before it gets here (available() is false).

#include "base/error.h"
#include "distributed/nccl.h"

namespace normgrad::distributed::nccl {

namespace {

Test refuse() {
  throw Error(
      "distributed: collectives on CUDA tensors need NCCL, which this build of normgrad was "
      "configured without");
}

}  // namespace

bool available() { return false; }
Test all_reduce(const ProcessGroup&, const Tensor&, bool) { return refuse(); }
Test broadcast(const ProcessGroup&, const Tensor&, int) { return refuse(); }
Test all_gather(const ProcessGroup&, const Tensor&, const Tensor&) { return refuse(); }

}  // namespace normgrad::distributed::nccl
