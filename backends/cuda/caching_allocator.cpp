#include "backends/cuda/caching_allocator.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "backends/cuda/cuda_check.h"
#include "backends/cuda/device_guard.h"
#include "core/error.h"

namespace normgrad::backend::cuda {

namespace {

constexpr std::size_t small_granule = 512;
constexpr std::size_t large_granule = std::size_t{2} << 20;
constexpr std::size_t large_threshold = std::size_t{1} << 20;

bool caching_from_environment() {
  const char* value = std::getenv("NORMGRAD_CUDA_CACHING");
  return value == nullptr || std::strcmp(value, "0") != 0;
}

double mib(std::size_t bytes) { return static_cast<double>(bytes) / (1 << 20); }

}  // namespace

CachingAllocator::CachingAllocator(int device)
    : device_(device), enabled_(caching_from_environment()) {}

// Cached blocks go back to the driver; blocks still in live tensors are the tensors' to free.
CachingAllocator::~CachingAllocator() {
  std::lock_guard lock(mutex_);
  for (auto& [size, block] : free_blocks_) cudaFree(block);  // a destructor must not throw
}

std::size_t CachingAllocator::rounded_size(std::size_t nbytes) {
  const std::size_t granule = nbytes < large_threshold ? small_granule : large_granule;
  return std::max<std::size_t>((nbytes + granule - 1) / granule * granule, granule);
}

void* CachingAllocator::allocate(std::size_t nbytes) {
  const std::size_t size = rounded_size(nbytes);
  std::lock_guard lock(mutex_);
  void* block = nullptr;
  if (auto found = free_blocks_.find(size); found != free_blocks_.end()) {
    block = found->second;
    free_blocks_.erase(found);
    cached_bytes_ -= size;
  } else {
    DeviceGuard guard(device_);
    cudaError_t status = cudaMalloc(&block, size);
    if (status == cudaErrorMemoryAllocation && !free_blocks_.empty()) {
      cudaGetLastError();  // clear the sticky-until-read error before trying again
      release_cached_locked();
      status = cudaMalloc(&block, size);
    }
    if (status == cudaErrorMemoryAllocation) {
      cudaGetLastError();
      std::size_t free_bytes = 0, total_bytes = 0;
      cudaMemGetInfo(&free_bytes, &total_bytes);
      throw Error(detail::concat("cuda:", device_, ": out of memory allocating ", mib(size),
                                 " MiB (", nbytes, " bytes requested); allocated by tensors ",
                                 mib(allocated_bytes_), " MiB, peak ", mib(peak_allocated_bytes_),
                                 " MiB, cached ", mib(cached_bytes_), " MiB; the device has ",
                                 mib(free_bytes), " MiB free of ", mib(total_bytes), " MiB"));
    }
    check_cuda(status, "cudaMalloc", __FILE__, __LINE__);
  }
  allocated_bytes_ += size;
  peak_allocated_bytes_ = std::max(peak_allocated_bytes_, allocated_bytes_);
  return block;
}

void CachingAllocator::deallocate(void* data, std::size_t nbytes) {
  if (data == nullptr) return;
  const std::size_t size = rounded_size(nbytes);
  std::lock_guard lock(mutex_);
  allocated_bytes_ -= size;
  if (enabled_) {
    free_blocks_.emplace(size, data);
    cached_bytes_ += size;
  } else {
    DeviceGuard guard(device_);
    NG_CUDA_CHECK(cudaFree(data));
  }
}

MemoryStats CachingAllocator::stats() const {
  std::lock_guard lock(mutex_);
  return {allocated_bytes_, peak_allocated_bytes_, cached_bytes_};
}

void CachingAllocator::empty_cache() {
  std::lock_guard lock(mutex_);
  release_cached_locked();
}

void CachingAllocator::set_enabled(bool enabled) {
  std::lock_guard lock(mutex_);
  enabled_ = enabled;
  if (!enabled_) release_cached_locked();
}

// cudaFree waits for the device to finish the work queued before it, so a cached block that a
// queued kernel still uses is not released under it.
void CachingAllocator::release_cached_locked() {
  DeviceGuard guard(device_);
  // One block at a time out of the list, so that a failing cudaFree leaves no freed block in it.
  while (!free_blocks_.empty()) {
    const auto [size, block] = *free_blocks_.begin();
    free_blocks_.erase(free_blocks_.begin());
    cached_bytes_ -= size;
    NG_CUDA_CHECK(cudaFree(block));
  }
}

}  // namespace normgrad::backend::cuda
