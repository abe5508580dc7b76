#pragma once
// The caching allocator, one for every device, over the device's own malloc and free
// (a BlockSource: aligned_alloc on the CPU, cudaMalloc on a GPU).
//
// Why cache. A training step frees and allocates the same sizes step after step. On the CPU a
// fresh large block costs its page faults at the first write (several times the write itself);
// on a GPU cudaMalloc and cudaFree synchronise the device and cost tens of microseconds each.
// A freed block is kept and handed to the next request that fits it.
//
// What fits is the device's CachePolicy: every request is rounded up to a block size; a
// cached block serves requests down to 1/max_reuse_ratio of its size (the CPU's 2 lets a batch
// of shorter sentences reuse a longer batch's blocks; a GPU's 1 takes its own size only);
// blocks below min_cached_bytes go straight back to the source; at most limit_bytes stay
// cached. When the source is out of memory, the cache is given back and the request tried once
// more; if that fails too, the Error names the request and the allocator's numbers.
// empty_cache() gives the cache back; set_enabled(false), or the policy's environment switch
// set to 0, turns caching off (every free goes to the source at once, for memory checkers).
//
// Graph pools (CUDA graphs, backends/cuda/graph.cpp). A graph replays the kernels it recorded
// on the very memory they used when it was captured, so that memory must stay the graph's.
// Between begin_pool() and end_pool() every allocation is a block of a new pool, and so is
// every block freed meanwhile (a tensor made before the capture and dropped in it may still be
// read by the recorded kernels). A pool's blocks, freed, go back to the pool, never to the
// cache, for as long as the graph lives; release_pool() then hands its free blocks to the
// cache, and its blocks still in tensors go there when freed. Stream order makes the reuse
// inside a capture safe, as outside: the graph runs its kernels in the order they were
// recorded. While a pool is open the cache is never given back to the source (a capture
// cannot record the wait that cudaFree makes).

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "backends/backend.h"

namespace normgrad::backend {

// A device's own memory.
class BlockSource {
 public:
  virtual ~BlockSource() = default;
  // The device as errors name it ("cpu", "cuda:0").
  virtual std::string name() const = 0;
  // A fresh block of `bytes` (a rounded size), or nullptr when the device has no memory left.
  virtual void* allocate(std::size_t bytes) = 0;
  virtual void free(void* block) = 0;
  // The message of the Error for a request of `requested` bytes, a block of `bytes`, that the
  // device could not serve even with the cache given back.
  virtual std::string out_of_memory(std::size_t requested, std::size_t bytes,
                                    const MemoryStats& stats) const = 0;
};

struct CachePolicy {
  std::size_t (*rounded_size)(std::size_t nbytes) = nullptr;  // the block size of a request
  std::size_t min_cached_bytes = 0;
  std::size_t max_reuse_ratio = 1;
  std::size_t limit_bytes = SIZE_MAX;
  const char* environment_switch = nullptr;  // caching is off when this variable is "0"
};

class CachingAllocator {
 public:
  CachingAllocator(std::unique_ptr<BlockSource> source, const CachePolicy& policy);
  ~CachingAllocator();  // cached blocks go back to the source; live ones are their tensors'
  CachingAllocator(const CachingAllocator&) = delete;
  CachingAllocator& operator=(const CachingAllocator&) = delete;

  void* allocate(std::size_t nbytes);
  void deallocate(void* data, std::size_t nbytes);

  MemoryStats stats() const;
  void reset_peak();  // the peak becomes the bytes allocated now
  void empty_cache();
  void set_enabled(bool enabled);

  int begin_pool();  // returns the new pool's id
  void end_pool();
  void release_pool(int pool);

 private:
  using Blocks = std::multimap<std::size_t, void*>;  // by block size
  void* take_cached_locked(std::size_t size, std::size_t& block_bytes);
  void release_cached_locked();

  std::unique_ptr<BlockSource> source_;
  CachePolicy policy_;
  mutable std::mutex mutex_;
  Blocks free_blocks_;
  // Live blocks larger than their request's rounded size (a reuse down to 1/max_reuse_ratio).
  std::unordered_map<void*, std::size_t> larger_blocks_;
  std::unordered_map<void*, int> pool_of_;  // blocks that belong to a graph's pool
  std::map<int, Blocks> pool_free_;         // each pool's free blocks
  int active_pool_ = -1;                    // while capturing
  int next_pool_ = 0;
  bool enabled_ = true;
  std::size_t allocated_bytes_ = 0;  // in live tensors (whole blocks)
  std::size_t peak_allocated_bytes_ = 0;
  std::size_t cached_bytes_ = 0;  // in free blocks kept for reuse, pools' included
};

}  // namespace normgrad::backend
