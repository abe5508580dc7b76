// CUDA graphs (core/cuda.h's Graph): a device's stream captured while a piece of host code
// queues its work, then replayed with one launch.
//
// Capture. cudaStreamBeginCapture turns the device's one stream into a recorder: every kernel,
// memset and device-to-device copy queued on it is added to a graph instead of running. The capture
// mode is relaxed, so that the allocator may still call cudaMalloc for a block the capture needs;
// what a capture cannot record (waiting for the stream, a copy from pageable host memory) still
// fails, and the library refuses it first with its own message. The caching allocator routes the
// capture's memory to a pool of the graph's own (backends/caching_allocator.h), so that replays
// find the blocks the recorded kernels were given, and nothing else is handed them while the graph
// lives. If the work throws, or did something a capture cannot record, the capture is ended, its
// partial graph dropped and its pool released, and the error names what happened; the Graph can
// then capture again.
//
// Replay is cudaGraphLaunch on the same stream, in order with the eager work around it.

#include <cuda_runtime_api.h>

#include "backends/caching_allocator.h"
#include "backends/cuda/cuda_backend.h"
#include "backends/cuda/cuda_check.h"
#include "backends/cuda/device_guard.h"
#include "backends/dispatch.h"
#include "base/error.h"

namespace normgrad::backend {

struct CudaGraph {
  cuda::CudaBackend* backend = nullptr;
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t executable = nullptr;
  int pool = -1;  // the allocator's pool holding the captured memory
  std::size_t nodes = 0;
};

namespace {

const char* const capture_op = "cuda::Graph::capture";

// A failed capture's pool back to the cache, the allocator no longer routing to it.
void drop_pool(CudaGraph& state) noexcept {
  const cuda::Context& context = state.backend->context();
  try {
    context.allocator->end_pool();
    context.allocator->release_pool(state.pool);
  } catch (...) {  // a failing cudaFree leaks the pool's blocks; the capture's error matters more
  }
  state.pool = -1;
}

// Ends a capture that failed: the stream records no more, the partial graph and the pool go.
void abandon_capture(CudaGraph& state) noexcept {
  cudaGraph_t partial = nullptr;
  cudaStreamEndCapture(state.backend->context().stream, &partial);
  if (partial != nullptr) cudaGraphDestroy(partial);
  cudaGetLastError();  // the capture's error is reported by the caller
  drop_pool(state);
}

}  // namespace

CudaGraph* cuda_graph_create(int index) {
  auto& backend = static_cast<cuda::CudaBackend&>(cuda_backend(index));
  return new CudaGraph{&backend};
}

void cuda_graph_capture(CudaGraph* state, const std::function<void()>& work) {
  const cuda::Context& context = state->backend->context();
  cuda::DeviceGuard guard(context.device);
  // Work queued before the capture runs first, eagerly: the graph starts from its results.
  state->pool = context.allocator->begin_pool();
  const cudaError_t began = cudaStreamBeginCapture(context.stream, cudaStreamCaptureModeRelaxed);
  if (began != cudaSuccess) {
    drop_pool(*state);
    cuda::check_cuda(began, "cudaStreamBeginCapture", __FILE__, __LINE__);
  }
  try {
    work();
  } catch (const Error& error) {
    abandon_capture(*state);
    throw Error(detail::concat(capture_op, ": the captured work failed: ", error.what()));
  } catch (...) {
    abandon_capture(*state);
    throw;
  }
  cudaGraph_t graph = nullptr;
  const cudaError_t ended = cudaStreamEndCapture(context.stream, &graph);
  context.allocator->end_pool();
  if (ended != cudaSuccess || graph == nullptr) {
    if (graph != nullptr) cudaGraphDestroy(graph);
    cudaGetLastError();
    drop_pool(*state);
    throw Error(detail::concat(
        capture_op, ": cuda:", context.device, ": the capture was invalidated (",
        cudaGetErrorName(ended),
        "): the work did something a graph cannot record, such as waiting for the device or "
        "copying from host memory; move that out of the captured work"));
  }
  state->graph = graph;
  const cudaError_t made = cudaGraphInstantiate(&state->executable, graph, 0);
  if (made != cudaSuccess) {
    cudaGraphDestroy(graph);
    state->graph = nullptr;
    state->executable = nullptr;
    drop_pool(*state);
    cuda::check_cuda(made, "cudaGraphInstantiate", __FILE__, __LINE__);
  }
  NG_CUDA_CHECK(cudaGraphGetNodes(graph, nullptr, &state->nodes));
}

void cuda_graph_replay(CudaGraph* state) {
  NG_CHECK(state->executable != nullptr, "cuda::Graph::replay",
           "nothing has been captured: call capture() first");
  const cuda::Context& context = state->backend->context();
  cuda::DeviceGuard guard(context.device);
  NG_CUDA_CHECK(cudaGraphLaunch(state->executable, context.stream));
}

bool cuda_graph_captured(const CudaGraph* state) { return state->executable != nullptr; }

std::size_t cuda_graph_nodes(const CudaGraph* state) { return state->nodes; }

// The graph's memory goes back to the cache behind any replay still queued (stream order).
// An executable graph destroyed while a replay is in flight is freed when that replay ends.
void cuda_graph_destroy(CudaGraph* state) noexcept {
  if (state == nullptr) return;
  const cuda::Context& context = state->backend->context();
  try {
    cuda::DeviceGuard guard(context.device);
    if (state->executable != nullptr) cudaGraphExecDestroy(state->executable);
    if (state->graph != nullptr) cudaGraphDestroy(state->graph);
    if (state->pool >= 0) context.allocator->release_pool(state->pool);
  } catch (...) {  // a destructor's path: a failing cudaFree leaks the blocks
  }
  delete state;
}

}  // namespace normgrad::backend
