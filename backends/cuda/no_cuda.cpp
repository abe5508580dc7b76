// The CPU-only stand-in for the CUDA backend, compiled when normgrad is configured without
// CUDA. Every request for a CUDA device fails with an error that says how to get one.

#include "backends/dispatch.h"
#include "base/error.h"

namespace normgrad::backend {

bool cuda_is_available() { return false; }

int cuda_device_count() { return 0; }

Backend& cuda_backend(int index) {
  throw Error(
      detail::concat("cuda:", index,
                     ": this build of normgrad has no CUDA backend (configure with "
                     "-DNORMGRAD_CUDA=ON on a machine with the CUDA toolkit); use Device::cpu()"));
}

void cuda_synchronize(int index) { cuda_backend(index); }

std::int64_t cuda_host_waits(int index) {
  cuda_backend(index);
  return 0;
}

// Kept, so that code setting it runs unchanged in builds without CUDA; nothing reads it.
namespace {
bool tf32 = false;
bool implicit_gemm = false;
}  // namespace

void cuda_set_allow_tf32(bool allow) { tf32 = allow; }

bool cuda_allow_tf32() { return tf32; }

void cuda_set_implicit_gemm_convolutions(bool use) { implicit_gemm = use; }

bool cuda_implicit_gemm_convolutions() { return implicit_gemm; }

bool cuda_is_capturing(int index) {
  cuda_backend(index);
  return false;
}

// No graph can be made here, so the other calls are never reached with one.
CudaGraph* cuda_graph_create(int index) {
  cuda_backend(index);
  return nullptr;
}
void cuda_graph_capture(CudaGraph*, const std::function<void()>&) { cuda_backend(0); }
void cuda_graph_replay(CudaGraph*) { cuda_backend(0); }
bool cuda_graph_captured(const CudaGraph*) { return false; }
std::size_t cuda_graph_nodes(const CudaGraph*) { return 0; }
void cuda_graph_destroy(CudaGraph*) noexcept {}

}  // namespace normgrad::backend
