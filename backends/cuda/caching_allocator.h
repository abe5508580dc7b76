#pragma once
// Device memory for one GPU, cached: cudaMalloc and cudaFree synchronise the device and cost
// tens of microseconds each, while a training step frees and allocates the same sizes again
// and again. A freed block is kept and handed to the next request of its rounded size.
//
// Sizes round up to 512 bytes below 1 MiB and to 2 MiB above; blocks are never split. When
// cudaMalloc fails, the cache is given back to the driver and the request tried once more;
// if that fails too, the Error reports the request and the allocated, peak and cached bytes.
// NORMGRAD_CUDA_CACHING=0 in the environment (or set_enabled(false)) turns caching off, so
// that every free goes to cudaFree at once (for memory checkers).

#include <cstddef>
#include <map>
#include <mutex>

#include "backends/backend.h"

namespace normgrad::backend::cuda {

class CachingAllocator {
 public:
  explicit CachingAllocator(int device);
  ~CachingAllocator();
  CachingAllocator(const CachingAllocator&) = delete;
  CachingAllocator& operator=(const CachingAllocator&) = delete;

  void* allocate(std::size_t nbytes);
  void deallocate(void* data, std::size_t nbytes);

  MemoryStats stats() const;
  void empty_cache();
  void set_enabled(bool enabled);

  static std::size_t rounded_size(std::size_t nbytes);

 private:
  void release_cached_locked();

  int device_;
  mutable std::mutex mutex_;
  std::multimap<std::size_t, void*> free_blocks_;  // by rounded size
  bool enabled_ = true;
  std::size_t allocated_bytes_ = 0;
  std::size_t peak_allocated_bytes_ = 0;
  std::size_t cached_bytes_ = 0;
};

}  // namespace normgrad::backend::cuda
