#pragma once
// A cache of large host blocks. Training runs allocate the same tensor sizes step after step;
// handing a freed block back to the next request of its size skips both the allocator and the
// page faults of fresh memory (a first write to a freshly mapped 64 MiB block costs several
// times the write itself). Blocks below `min_cached_bytes` go straight to the C library,
// whose own free lists already serve small sizes well.
//
// Sizes are rounded up (to 64 KiB below 2 MiB, to 2 MiB above). A request takes the smallest
// cached block that holds it, as long as that block is at most twice its rounded size: a
// training step on a batch of shorter sentences then reuses the blocks of a longer batch
// instead of faulting in fresh memory for every new length. Cached blocks are freed when the
// cache would exceed its limit or on empty_cache().
// NORMGRAD_CPU_CACHING=0 in the environment turns caching off for debugging (then every
// block is freed at once, as with plain malloc).

#include <cstddef>
#include <map>
#include <mutex>
#include <unordered_map>

#include "backends/backend.h"

namespace normgrad::backend::cpu {

class CachingAllocator {
 public:
  static constexpr std::size_t min_cached_bytes = std::size_t{256} << 10;
  // A cached block serves requests down to 1/max_reuse_ratio of its size.
  static constexpr std::size_t max_reuse_ratio = 2;

  CachingAllocator();
  ~CachingAllocator();
  CachingAllocator(const CachingAllocator&) = delete;
  CachingAllocator& operator=(const CachingAllocator&) = delete;

  void* allocate(std::size_t nbytes);
  void deallocate(void* data, std::size_t nbytes);

  MemoryStats stats() const;
  void reset_peak();  // the peak becomes the bytes allocated now
  void empty_cache();
  void set_enabled(bool enabled);

 private:
  void release_cached_locked();

  mutable std::mutex mutex_;
  std::multimap<std::size_t, void*> free_blocks_;       // by block size
  std::unordered_map<void*, std::size_t> block_sizes_;  // live blocks of cacheable size
  bool enabled_ = true;
  std::size_t limit_bytes_ = 0;
  std::size_t allocated_bytes_ = 0;  // in live tensors (whole blocks)
  std::size_t peak_allocated_bytes_ = 0;
  std::size_t cached_bytes_ = 0;  // in free blocks kept for reuse
};

}  // namespace normgrad::backend::cpu
