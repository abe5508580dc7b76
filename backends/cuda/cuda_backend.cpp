// CudaBackend's device, stream, cuBLAS handle and memory; the error reports of cuda_check.h;
// and the functions of backends/dispatch.h that find CUDA devices.

#include "backends/cuda/cuda_backend.h"

#include <algorithm>
#include <atomic>
#include <memory>
#include <mutex>
#include <vector>

#include "backends/cuda/cuda_check.h"
#include "backends/cuda/device_guard.h"
#include "backends/dispatch.h"
#include "base/error.h"

namespace normgrad::backend {

namespace cuda {

void throw_cuda_error(cudaError_t status, const char* call, const char* file, int line) {
  throw Error(detail::concat("cuda: ", call, " failed at ", file, ":", line, ": ",
                             cudaGetErrorName(status), ": ", cudaGetErrorString(status)));
}

void throw_cublas_error(cublasStatus_t status, const char* call, const char* file, int line) {
  throw Error(detail::concat("cublas: ", call, " failed at ", file, ":", line, ": ",
                             cublasGetStatusName(status), ": ", cublasGetStatusString(status)));
}

namespace {
std::atomic<bool> tf32{false};
std::atomic<bool> implicit_gemm{false};
}  // namespace

bool tf32_allowed() { return tf32.load(std::memory_order_relaxed); }

bool implicit_gemm_convolutions() { return implicit_gemm.load(std::memory_order_relaxed); }

bool capturing(const Context& context) {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  NG_CUDA_CHECK(cudaStreamIsCapturing(context.stream, &status));
  return status != cudaStreamCaptureStatusNone;
}

Workspace::Workspace(const Context& context, std::size_t nbytes)
    : allocator_(context.allocator), nbytes_(nbytes) {
  if (nbytes_ > 0) data_ = allocator_->allocate(nbytes_);
}

Workspace::~Workspace() {
  try {
    allocator_->deallocate(data_, nbytes_);
  } catch (...) {  // a destructor must not throw; a failed cudaFree leaks the block
  }
}

namespace {

constexpr std::size_t small_granule = 512;
constexpr std::size_t large_granule = std::size_t{2} << 20;
constexpr std::size_t large_threshold = std::size_t{1} << 20;

// 512-byte blocks below 1 MiB, 2 MiB ones above; a cached block serves its own size only.
std::size_t rounded_size(std::size_t nbytes) {
  const std::size_t granule = nbytes < large_threshold ? small_granule : large_granule;
  return std::max<std::size_t>((nbytes + granule - 1) / granule * granule, granule);
}

double mib(std::size_t bytes) { return static_cast<double>(bytes) / (1 << 20); }

// One GPU's memory, through cudaMalloc and cudaFree on that device.
class DeviceMemory final : public BlockSource {
 public:
  explicit DeviceMemory(int device) : device_(device) {}
  std::string name() const override { return detail::concat("cuda:", device_); }
  void* allocate(std::size_t bytes) override {
    DeviceGuard guard(device_);
    void* block = nullptr;
    const cudaError_t status = cudaMalloc(&block, bytes);
    if (status == cudaErrorMemoryAllocation) {
      cudaGetLastError();  // clear the sticky-until-read error
      return nullptr;
    }
    check_cuda(status, "cudaMalloc", __FILE__, __LINE__);
    return block;
  }
  void free(void* block) override {
    DeviceGuard guard(device_);
    NG_CUDA_CHECK(cudaFree(block));
  }
  std::string out_of_memory(std::size_t requested, std::size_t bytes,
                            const MemoryStats& stats) const override {
    DeviceGuard guard(device_);
    std::size_t free_bytes = 0, total_bytes = 0;
    cudaMemGetInfo(&free_bytes, &total_bytes);
    return detail::concat(
        "cuda:", device_, ": out of memory allocating ", mib(bytes), " MiB (", requested,
        " bytes requested); allocated by tensors ", mib(stats.allocated_bytes), " MiB, peak ",
        mib(stats.peak_allocated_bytes), " MiB, cached ", mib(stats.cached_bytes),
        " MiB; the device has ", mib(free_bytes), " MiB free of ", mib(total_bytes), " MiB");
  }

 private:
  int device_;
};

}  // namespace

CudaBackend::CudaBackend(int device)
    : allocator_(std::make_unique<CachingAllocator>(
          std::make_unique<DeviceMemory>(device),
          CachePolicy{.rounded_size = rounded_size,
                      .environment_switch = "NORMGRAD_CUDA_CACHING"})) {
  context_.device = device;
  context_.allocator = allocator_.get();
  context_.host_waits = &host_waits_;
  DeviceGuard guard(device);
  NG_CUDA_CHECK(
      cudaDeviceGetAttribute(&context_.multiprocessors, cudaDevAttrMultiProcessorCount, device));
  try {
    NG_CUDA_CHECK(cudaStreamCreateWithFlags(&context_.stream, cudaStreamNonBlocking));
    NG_CUBLAS_CHECK(cublasCreate(&context_.blas));
    NG_CUBLAS_CHECK(cublasSetStream(context_.blas, context_.stream));
  } catch (...) {  // a half-built object gets no destructor call: release what was made
    release_handles();
    throw;
  }
}

// Backends live until the process ends (see cuda_backend() below), so this runs rarely.
CudaBackend::~CudaBackend() { release_handles(); }

void CudaBackend::release_handles() noexcept {
  if (context_.blas != nullptr) cublasDestroy(context_.blas);
  if (context_.stream != nullptr) cudaStreamDestroy(context_.stream);
  context_.blas = nullptr;
  context_.stream = nullptr;
}

void* CudaBackend::allocate(std::size_t nbytes) { return allocator_->allocate(nbytes); }

void CudaBackend::deallocate(void* data, std::size_t nbytes) {
  allocator_->deallocate(data, nbytes);
}

// The copies between host and device cannot be recorded in a graph (graph.cpp).
void CudaBackend::refuse_while_capturing(const char* what) const {
  if (capturing(context_)) throw Error(detail::concat("cuda:", context_.device, ": ", what));
}

void CudaBackend::copy_to_host(void* host_dst, const void* src, std::size_t nbytes) {
  if (nbytes == 0) return;
  DeviceGuard guard(context_.device);
  refuse_while_capturing(
      "a value cannot be read back to the host while a CUDA graph is being captured (item(), "
      "to_vector(), .to(Device::cpu()), or a check that reads a kernel's verdict); a capture "
      "records kernels without running them: read results after replay()");
  NG_CUDA_CHECK(cudaMemcpyAsync(host_dst, src, nbytes, cudaMemcpyDeviceToHost, context_.stream));
  NG_CUDA_CHECK(cudaStreamSynchronize(context_.stream));
  host_waits_.fetch_add(1, std::memory_order_relaxed);
}

void CudaBackend::copy_from_host(void* dst, const void* host_src, std::size_t nbytes) {
  if (nbytes == 0) return;
  DeviceGuard guard(context_.device);
  refuse_while_capturing(
      "host data cannot be copied to the device while a CUDA graph is being captured (a tensor "
      "made on the CPU inside the captured work and moved to the GPU); make it before the "
      "capture and copy_() new values into it between replays");
  // No wait: host memory here is pageable (never pinned), and from pageable memory
  // cudaMemcpyAsync returns only once it has copied the buffer to its own staging memory, so
  // the caller may free or reuse it at once. The copy keeps its place in the stream's order, so
  // kernels queued after it read the new data. A batch moved to the GPU therefore costs the
  // step no wait.
  NG_CUDA_CHECK(cudaMemcpyAsync(dst, host_src, nbytes, cudaMemcpyHostToDevice, context_.stream));
}

void CudaBackend::empty_cache() {
  synchronize();
  allocator_->empty_cache();
}

void CudaBackend::synchronize() {
  DeviceGuard guard(context_.device);
  NG_CUDA_CHECK(cudaStreamSynchronize(context_.stream));
}

}  // namespace cuda

int cuda_device_count() {
  // Asked once: the answer does not change while the process runs. No driver or no GPU
  // counts as none.
  static const int count = [] {
    int devices = 0;
    if (cudaGetDeviceCount(&devices) != cudaSuccess) {
      cudaGetLastError();
      return 0;
    }
    return devices;
  }();
  return count;
}

bool cuda_is_available() { return cuda_device_count() > 0; }

Backend& cuda_backend(int index) {
  const int count = cuda_device_count();
  if (count == 0)
    throw Error(detail::concat("cuda:", index,
                               ": no CUDA device is available (this build has the CUDA backend, "
                               "but the driver reports no GPU); use Device::cpu()"));
  NG_CHECK(index >= 0 && index < count, "cuda", "device cuda:", index, " is out of range: ", count,
           " CUDA device", count == 1 ? "" : "s", " (cuda:0 to cuda:", count - 1, ")");
  // One backend per device, made at first use and never destroyed: tensors owned by static
  // objects may be freed after it would be.
  static std::vector<cuda::CudaBackend*> backends(static_cast<std::size_t>(count), nullptr);
  static std::mutex mutex;
  std::lock_guard lock(mutex);
  auto& backend = backends[static_cast<std::size_t>(index)];
  if (backend == nullptr) backend = new cuda::CudaBackend(index);
  return *backend;
}

void cuda_synchronize(int index) {
  static_cast<cuda::CudaBackend&>(cuda_backend(index)).synchronize();
}

std::int64_t cuda_host_waits(int index) {
  return static_cast<cuda::CudaBackend&>(cuda_backend(index)).host_waits();
}

void cuda_set_allow_tf32(bool allow) { cuda::tf32.store(allow, std::memory_order_relaxed); }

bool cuda_allow_tf32() { return cuda::tf32_allowed(); }

void cuda_set_implicit_gemm_convolutions(bool use) {
  cuda::implicit_gemm.store(use, std::memory_order_relaxed);
}

bool cuda_implicit_gemm_convolutions() { return cuda::implicit_gemm_convolutions(); }

bool cuda_is_capturing(int index) {
  return cuda::capturing(static_cast<cuda::CudaBackend&>(cuda_backend(index)).context());
}

}  // namespace normgrad::backend
