#include "backends/caching_allocator.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <utility>

#include "base/checked.h"
#include "base/error.h"

namespace normgrad::backend {

CachingAllocator::CachingAllocator(std::unique_ptr<BlockSource> source, const CachePolicy& policy)
    : source_(std::move(source)), policy_(policy) {
  const char* setting =
      policy_.environment_switch ? std::getenv(policy_.environment_switch) : nullptr;
  if (setting && std::strcmp(setting, "0") == 0) enabled_ = false;
}

// A destructor must not throw: a block the source fails to free is left to the process's end.
CachingAllocator::~CachingAllocator() {
  const auto release = [this](const Blocks& blocks) {
    for (const auto& [size, block] : blocks) {
      try {
        source_->free(block);
      } catch (...) {
      }
    }
  };
  release(free_blocks_);
  for (const auto& [pool, blocks] : pool_free_) release(blocks);
}

void* CachingAllocator::allocate(std::size_t nbytes) {
  // Larger requests cannot come from core (it caps tensors at max_tensor_bytes, 2^48), and
  // refusing them here keeps the rounding from wrapping.
  NG_CHECK(nbytes <= max_tensor_bytes, source_->name() + " allocate", "refusing ", nbytes,
           " bytes, more than the 2^48 a tensor may hold");
  const std::size_t size = policy_.rounded_size(nbytes);
  std::lock_guard lock(mutex_);
  void* block = nullptr;
  std::size_t block_bytes = size;
  if (active_pool_ >= 0) {  // a graph's own free blocks first
    Blocks& pool = pool_free_[active_pool_];
    if (const auto found = pool.find(size); found != pool.end()) {
      block = found->second;
      pool.erase(found);
      cached_bytes_ -= size;
    }
  }
  if (block == nullptr) block = take_cached_locked(size, block_bytes);
  if (block == nullptr) {
    block = source_->allocate(size);
    // The cached blocks may be what is missing: give them back and try again.
    if (block == nullptr && !free_blocks_.empty() && active_pool_ < 0) {
      release_cached_locked();
      block = source_->allocate(size);
    }
    if (block == nullptr)
      throw Error(source_->out_of_memory(
          nbytes, size, {allocated_bytes_, peak_allocated_bytes_, cached_bytes_}));
  }
  if (active_pool_ >= 0) pool_of_[block] = active_pool_;
  if (block_bytes != size) larger_blocks_.emplace(block, block_bytes);
  allocated_bytes_ += block_bytes;
  peak_allocated_bytes_ = std::max(peak_allocated_bytes_, allocated_bytes_);
  return block;
}

// The smallest cached block that holds `size`, if it is at most max_reuse_ratio times as large.
void* CachingAllocator::take_cached_locked(std::size_t size, std::size_t& block_bytes) {
  if (size < policy_.min_cached_bytes) return nullptr;
  const auto found = free_blocks_.lower_bound(size);
  if (found == free_blocks_.end() || found->first > size * policy_.max_reuse_ratio) return nullptr;
  void* block = found->second;
  block_bytes = found->first;
  free_blocks_.erase(found);
  cached_bytes_ -= block_bytes;
  return block;
}

void CachingAllocator::deallocate(void* data, std::size_t nbytes) {
  if (data == nullptr) return;
  std::size_t block_bytes = policy_.rounded_size(nbytes);
  {
    std::lock_guard lock(mutex_);
    if (const auto larger = larger_blocks_.find(data); larger != larger_blocks_.end()) {
      block_bytes = larger->second;
      larger_blocks_.erase(larger);
    }
    allocated_bytes_ -= block_bytes;
    // A pool's block goes back to its pool; a block freed during a capture joins the graph's.
    int pool = active_pool_;
    if (const auto owner = pool_of_.find(data); owner != pool_of_.end()) pool = owner->second;
    if (pool >= 0) {
      pool_of_[data] = pool;
      pool_free_[pool].emplace(block_bytes, data);
      cached_bytes_ += block_bytes;
      return;
    }
    if (enabled_ && block_bytes >= policy_.min_cached_bytes &&
        cached_bytes_ + block_bytes <= policy_.limit_bytes) {
      free_blocks_.emplace(block_bytes, data);
      cached_bytes_ += block_bytes;
      return;
    }
  }
  source_->free(data);
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

int CachingAllocator::begin_pool() {
  std::lock_guard lock(mutex_);
  NG_CHECK(active_pool_ < 0, "cuda::Graph", source_->name(),
           ": another graph is being captured on this device");
  active_pool_ = next_pool_++;
  pool_free_[active_pool_];
  return active_pool_;
}

void CachingAllocator::end_pool() {
  std::lock_guard lock(mutex_);
  active_pool_ = -1;
}

// The graph is gone. Its free blocks join the cache (or go to the source when caching is off);
// stream order keeps a replay still queued ahead of their next user. Blocks of the pool still
// in tensors are forgotten here, so that freeing them later takes the ordinary path.
void CachingAllocator::release_pool(int pool) {
  std::lock_guard lock(mutex_);
  if (active_pool_ == pool) active_pool_ = -1;
  for (auto it = pool_of_.begin(); it != pool_of_.end();)
    it = it->second == pool ? pool_of_.erase(it) : std::next(it);
  const auto blocks = pool_free_.find(pool);
  if (blocks == pool_free_.end()) return;
  Blocks released = std::move(blocks->second);
  pool_free_.erase(blocks);
  if (enabled_) {
    free_blocks_.merge(released);
    return;
  }
  for (const auto& [size, block] : released) {
    cached_bytes_ -= size;
    source_->free(block);
  }
}

// One block at a time out of the list, so that a failing free leaves no freed block in it.
// (cudaFree waits for the device to finish the work queued before it, so a cached block that
// a queued kernel still uses is not released under it.)
void CachingAllocator::release_cached_locked() {
  while (!free_blocks_.empty()) {
    const auto [size, block] = *free_blocks_.begin();
    free_blocks_.erase(free_blocks_.begin());
    cached_bytes_ -= size;
    source_->free(block);
  }
}

}  // namespace normgrad::backend
