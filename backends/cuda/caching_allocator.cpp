#include "backends/cuda/caching_allocator.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <utility>

#include "backends/cuda/cuda_check.h"
#include "backends/cuda/device_guard.h"
#include "base/error.h"

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
  for (auto& [pool, blocks] : pool_free_)
    for (auto& [size, block] : blocks) cudaFree(block);
}

std::size_t CachingAllocator::rounded_size(std::size_t nbytes) {
  const std::size_t granule = nbytes < large_threshold ? small_granule : large_granule;
  return std::max<std::size_t>((nbytes + granule - 1) / granule * granule, granule);
}

void* CachingAllocator::allocate(std::size_t nbytes) {
  const std::size_t size = rounded_size(nbytes);
  std::lock_guard lock(mutex_);
  void* block = nullptr;
  if (active_pool_ >= 0) {  // a graph's own free blocks first
    auto& pool = pool_free_[active_pool_];
    if (auto found = pool.find(size); found != pool.end()) {
      block = found->second;
      pool.erase(found);
      cached_bytes_ -= size;
    }
  }
  if (block == nullptr) block = take_cached_locked(size);
  if (block == nullptr) {
    DeviceGuard guard(device_);
    cudaError_t status = cudaMalloc(&block, size);
    // (Not while a graph is captured: cudaFree would wait for the device, which a capture
    // cannot record.)
    if (status == cudaErrorMemoryAllocation && !free_blocks_.empty() && active_pool_ < 0) {
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
  if (active_pool_ >= 0) pool_of_[block] = active_pool_;
  allocated_bytes_ += size;
  peak_allocated_bytes_ = std::max(peak_allocated_bytes_, allocated_bytes_);
  return block;
}

void CachingAllocator::deallocate(void* data, std::size_t nbytes) {
  if (data == nullptr) return;
  const std::size_t size = rounded_size(nbytes);
  std::lock_guard lock(mutex_);
  allocated_bytes_ -= size;
  // A pool's block goes back to its pool; a block freed during a capture joins the graph's.
  int pool = active_pool_;
  if (const auto owner = pool_of_.find(data); owner != pool_of_.end()) pool = owner->second;
  if (pool >= 0) {
    pool_of_[data] = pool;
    pool_free_[pool].emplace(size, data);
    cached_bytes_ += size;
    return;
  }
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

void CachingAllocator::reset_peak() {
  std::lock_guard lock(mutex_);
  peak_allocated_bytes_ = allocated_bytes_;
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

void* CachingAllocator::take_cached_locked(std::size_t size) {
  const auto found = free_blocks_.find(size);
  if (found == free_blocks_.end()) return nullptr;
  void* block = found->second;
  free_blocks_.erase(found);
  cached_bytes_ -= size;
  return block;
}

int CachingAllocator::begin_pool() {
  std::lock_guard lock(mutex_);
  NG_CHECK(active_pool_ < 0, "cuda::Graph", "cuda:", device_,
           ": another graph is being captured on this device");
  active_pool_ = next_pool_++;
  pool_free_[active_pool_];
  return active_pool_;
}

void CachingAllocator::end_pool() {
  std::lock_guard lock(mutex_);
  active_pool_ = -1;
}

// The graph is gone. Its free blocks join the cache (or go to the driver when caching is off);
// stream order keeps a replay still queued ahead of their next user. Blocks of the pool still
// in tensors are forgotten here, so that freeing them later takes the ordinary path.
void CachingAllocator::release_pool(int pool) {
  std::lock_guard lock(mutex_);
  if (active_pool_ == pool) active_pool_ = -1;
  for (auto it = pool_of_.begin(); it != pool_of_.end();)
    it = it->second == pool ? pool_of_.erase(it) : std::next(it);
  const auto blocks = pool_free_.find(pool);
  if (blocks == pool_free_.end()) return;
  std::multimap<std::size_t, void*> released = std::move(blocks->second);
  pool_free_.erase(blocks);
  if (enabled_) {
    free_blocks_.merge(released);
    return;
  }
  DeviceGuard guard(device_);
  for (const auto& [size, block] : released) {
    cached_bytes_ -= size;
    NG_CUDA_CHECK(cudaFree(block));
  }
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
