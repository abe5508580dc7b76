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
//
// Graph pools. A CUDA graph (graph.cpp) replays the kernels it recorded on the very memory
// they used when it was captured, so that memory must stay the graph's. Between begin_pool()
// and end_pool() every allocation is a block of a new pool, and so is every block freed
// meanwhile (a tensor made before the capture and dropped in it may still be read by the
// recorded kernels). A pool's blocks, freed, go back to the pool, never to the cache, for
// as long as the graph lives; release_pool() then hands its free blocks to the cache, and its
// blocks still in tensors go there when freed. Stream order makes the reuse inside a capture
// safe, as outside: the graph runs its kernels in the order they were recorded.

#include <cstddef>
#include <map>
#include <mutex>
#include <unordered_map>

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
  void reset_peak();  // the peak becomes the bytes allocated now
  void empty_cache();
  void set_enabled(bool enabled);

  static std::size_t rounded_size(std::size_t nbytes);

  int begin_pool();  // returns the new pool's id
  void end_pool();
  void release_pool(int pool);

 private:
  void release_cached_locked();
  void* take_cached_locked(std::size_t size);

  int device_;
  mutable std::mutex mutex_;
  std::multimap<std::size_t, void*> free_blocks_;  // by rounded size
  std::unordered_map<void*, int> pool_of_;         // blocks that belong to a graph's pool
  std::map<int, std::multimap<std::size_t, void*>> pool_free_;  // each pool's free blocks
  int active_pool_ = -1;                                        // while capturing
  int next_pool_ = 0;
  bool enabled_ = true;
  std::size_t allocated_bytes_ = 0;
  std::size_t peak_allocated_bytes_ = 0;
  std::size_t cached_bytes_ = 0;
};

}  // namespace normgrad::backend::cuda
