// Collectives on CUDA tensors through NCCL. One communicator per device, made at the first
// collective on it: rank 0 draws NCCL's unique id and MPI carries it to the others, then every
// rank joins (ncclCommInitRank, collective like the call that triggered it). Each collective
// runs on the device's stream, so it follows the kernels that computed its tensor and precedes
// those that read the result; an event recorded after it says when it has finished.

#include <cuda_runtime_api.h>
#include <mpi.h>
#include <nccl.h>

#include <map>
#include <memory>
#include <mutex>

#include "backends/cuda/cuda_backend.h"
#include "backends/cuda/device_guard.h"
#include "backends/dispatch.h"
#include "base/error.h"
#include "core/tensor_internal.h"
#include "distributed/nccl.h"
#include "distributed/process_group.h"

namespace normgrad::distributed::nccl {

namespace {

void check(ncclResult_t result, const char* call, const ProcessGroup& group) {
  if (result == ncclSuccess) return;
  throw Error(detail::concat("distributed: ", call, " failed on rank ", group.rank(), " of ",
                             group.size(), ": ", ncclGetErrorString(result)));
}

void check(cudaError_t result, const char* call, const ProcessGroup& group) {
  if (result == cudaSuccess) return;
  throw Error(detail::concat("distributed: ", call, " failed on rank ", group.rank(), " of ",
                             group.size(), ": ", cudaGetErrorString(result)));
}

ncclDataType_t nccl_type(DType dtype) {
  switch (dtype) {
    case DType::Float32:
      return ncclFloat32;
    case DType::Float64:
      return ncclFloat64;
    case DType::Int64:
      return ncclInt64;
    case DType::BFloat16:
      return ncclBfloat16;
  }
  return ncclFloat32;
}

// The communicator of the ranks' tensors on device `device` (this rank's; the others' may be
// other indices, one GPU per rank).
ncclComm_t communicator(const ProcessGroup& group, int device) {
  static std::map<int, ncclComm_t> communicators;
  static std::mutex mutex;
  const std::lock_guard lock(mutex);
  if (const auto found = communicators.find(device); found != communicators.end())
    return found->second;
  ncclUniqueId id{};
  if (group.rank() == 0) check(ncclGetUniqueId(&id), "ncclGetUniqueId", group);
  if (MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD) != MPI_SUCCESS)
    throw Error(
        detail::concat("distributed: MPI_Bcast of NCCL's unique id failed on rank ", group.rank()));
  const backend::cuda::DeviceGuard guard(device);
  ncclComm_t comm = nullptr;
  check(ncclCommInitRank(&comm, group.size(), id, group.rank()), "ncclCommInitRank", group);
  communicators.emplace(device, comm);
  return comm;
}

cudaStream_t stream_of(const Tensor& tensor) {
  return static_cast<backend::cuda::CudaBackend&>(backend::backend_for(tensor.device())).stream();
}

// Queues `collective(comm, stream)` on the tensor's device and returns the test of its end.
template <class Collective>
Test queued(const ProcessGroup& group, const Tensor& tensor, const char* call,
            Collective&& collective) {
  const int device = tensor.device().index;
  const backend::cuda::DeviceGuard guard(device);
  const ncclComm_t comm = communicator(group, device);
  const cudaStream_t stream = stream_of(tensor);
  check(collective(comm, stream), call, group);
  cudaEvent_t event = nullptr;
  check(cudaEventCreateWithFlags(&event, cudaEventDisableTiming), "cudaEventCreate", group);
  check(cudaEventRecord(event, stream), "cudaEventRecord", group);
  // The event is destroyed with the test (the Work that holds it).
  const auto owned = std::shared_ptr<CUevent_st>(event, [](cudaEvent_t e) { cudaEventDestroy(e); });
  return [owned, device, &group, call] {
    const backend::cuda::DeviceGuard current(device);
    const cudaError_t state = cudaEventQuery(owned.get());
    if (state == cudaErrorNotReady) return false;
    check(state, call, group);
    return true;
  };
}

}  // namespace

bool available() { return true; }

Test all_reduce(const ProcessGroup& group, const Tensor& tensor, bool mean) {
  void* data = detail::ref(tensor).data;
  return queued(group, tensor, "ncclAllReduce", [&](ncclComm_t comm, cudaStream_t stream) {
    return ncclAllReduce(data, data, static_cast<std::size_t>(tensor.numel()),
                         nccl_type(tensor.dtype()), mean ? ncclAvg : ncclSum, comm, stream);
  });
}

Test broadcast(const ProcessGroup& group, const Tensor& tensor, int root) {
  void* data = detail::ref(tensor).data;
  return queued(group, tensor, "ncclBroadcast", [&](ncclComm_t comm, cudaStream_t stream) {
    return ncclBroadcast(data, data, static_cast<std::size_t>(tensor.numel()),
                         nccl_type(tensor.dtype()), root, comm, stream);
  });
}

Test all_gather(const ProcessGroup& group, const Tensor& input, const Tensor& output) {
  const void* in = detail::ref(input).data;
  void* out = detail::ref(output).data;
  return queued(group, input, "ncclAllGather", [&](ncclComm_t comm, cudaStream_t stream) {
    return ncclAllGather(in, out, static_cast<std::size_t>(input.numel()), nccl_type(input.dtype()),
                         comm, stream);
  });
}

}  // namespace normgrad::distributed::nccl
