#pragma once
// What the host code of every CUDA kernel needs from its device: the stream its work goes to, the
// cuBLAS handle bound to that stream, the allocator for scratch memory, and settings.
//
// All of a device's work runs on its one stream, in order. So memory freed by one kernel's
// caller can be handed to the next kernel at once: the stream runs them one after the other.

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace normgrad::backend {
class CachingAllocator;
}  // namespace normgrad::backend

namespace normgrad::backend::cuda {

struct Context {
  int device = 0;
  cudaStream_t stream = nullptr;
  cublasHandle_t blas = nullptr;
  CachingAllocator* allocator = nullptr;
  int multiprocessors = 1;  // streaming multiprocessors, for sizing grids
  // The host's waits for this stream to read data back (normgrad::cuda::host_waits): every
  // method that copies a result to the host adds one.
  std::atomic<std::int64_t>* host_waits = nullptr;
};

// Whether the context's stream is being captured into a CUDA graph (graph.cpp). A capture
// records kernels without running them, so nothing can be read back meanwhile: the methods'
// checks that read a kernel's verdict are left out, and copies to the host are refused.
bool capturing(const Context& context);

// Whether float32 GEMMs may use TF32 tensor cores (10-bit mantissas in the products): off by
// default, set for every device by normgrad::cuda::set_allow_tf32 (core/cuda.h).
bool tf32_allowed();

// Whether conv2d runs as one implicit-GEMM kernel (conv.cu) rather than through
// im2col's columns and cuBLAS: off by default, set by normgrad::cuda::set_conv_algorithm.
bool implicit_gemm_convolutions();

// Scratch device memory for one method call (partial sums, sort buffers), from the caching
// allocator, given back when the Workspace goes out of scope. Stream order makes that safe:
// any later use of the block is queued behind the kernels that used it here.
class Workspace {
 public:
  Workspace(const Context& context, std::size_t nbytes);
  ~Workspace();
  Workspace(const Workspace&) = delete;
  Workspace& operator=(const Workspace&) = delete;

  void* data() const { return data_; }
  template <typename T> T* as() const { return static_cast<T*>(data_); }

 private:
  CachingAllocator* allocator_;
  void* data_ = nullptr;
  std::size_t nbytes_ = 0;
};

}  // namespace normgrad::backend::cuda
