// Host memory: 64-byte aligned blocks, large ones aligned to 2 MiB, marked for transparent
// huge pages and cached for reuse (see caching_allocator.h).
//
// Why huge pages: glibc serves large requests with a fresh mmap, and the first write to fresh
// memory costs one page fault per 4 KiB page. On the machine this was written on, a 64 MiB
// memcpy into a fresh buffer took 29 ms with 4 KiB pages, 6 ms with huge pages, and 3.7 ms
// into memory already mapped — which the cache provides from the second use on.

#include "backends/cpu/caching_allocator.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cassert>
#include <cstdlib>
#include <cstring>

#include "base/checked.h"
#include "base/error.h"

namespace normgrad::backend::cpu {

namespace {

constexpr std::size_t line_alignment = 64;
constexpr std::size_t huge_page = std::size_t{2} << 20;

constexpr std::size_t cache_granule = std::size_t{64} << 10;

std::size_t round_up(std::size_t nbytes, std::size_t multiple) {
  return (nbytes + multiple - 1) / multiple * multiple;
}

// aligned_alloc wants a multiple of the alignment, and a zero-byte request still gets a
// distinct, freeable block. Cached sizes are rounded more coarsely, so that nearby sizes
// share blocks.
std::size_t rounded_size(std::size_t nbytes) {
  if (nbytes >= huge_page) return round_up(nbytes, huge_page);
  if (nbytes >= CachingAllocator::min_cached_bytes) return round_up(nbytes, cache_granule);
  return nbytes == 0 ? line_alignment : round_up(nbytes, line_alignment);
}

void* allocate_fresh(std::size_t rounded, std::size_t requested) {
  const std::size_t alignment = rounded >= huge_page ? huge_page : line_alignment;
  void* data = std::aligned_alloc(alignment, rounded);
  NG_CHECK(data != nullptr, "cpu allocate", "out of memory allocating ", requested, " bytes");
#ifdef MADV_HUGEPAGE
  // Advice only: where huge pages are disabled the call fails and nothing changes.
  if (alignment == huge_page) madvise(data, rounded, MADV_HUGEPAGE);
#endif
  return data;
}

// A quarter of physical memory, at most 8 GiB: enough for the working set of a training step.
std::size_t default_limit() {
  const long pages = sysconf(_SC_PHYS_PAGES), page_size = sysconf(_SC_PAGESIZE);
  const std::size_t physical = pages > 0 && page_size > 0 ? static_cast<std::size_t>(pages) *
                                                                static_cast<std::size_t>(page_size)
                                                          : std::size_t{4} << 30;
  return std::min(physical / 4, std::size_t{8} << 30);
}

}  // namespace

CachingAllocator::CachingAllocator() : limit_bytes_(default_limit()) {
  const char* setting = std::getenv("NORMGRAD_CPU_CACHING");
  if (setting && std::strcmp(setting, "0") == 0) enabled_ = false;
}

CachingAllocator::~CachingAllocator() { release_cached_locked(); }

void* CachingAllocator::allocate(std::size_t nbytes) {
  // Larger requests cannot come from core (it caps tensors at max_tensor_bytes, 2^48), and
  // refusing them here keeps the rounding below from wrapping.
  NG_CHECK(nbytes <= max_tensor_bytes, "cpu allocate", "refusing ", nbytes,
           " bytes, more than the 2^48 a tensor may hold");
  const std::size_t rounded = rounded_size(nbytes);
  const bool cacheable = rounded >= min_cached_bytes;
  // Called with the mutex held, once the block is there.
  const auto count = [&](void* data, std::size_t block_bytes) {
    allocated_bytes_ += block_bytes;
    peak_allocated_bytes_ = std::max(peak_allocated_bytes_, allocated_bytes_);
    if (cacheable) block_sizes_.emplace(data, block_bytes);
  };
  if (cacheable) {
    std::lock_guard<std::mutex> lock(mutex_);
    const auto found = free_blocks_.lower_bound(rounded);  // the smallest block that fits
    if (found != free_blocks_.end() && found->first <= rounded * max_reuse_ratio) {
      const auto [block_bytes, data] = *found;
      free_blocks_.erase(found);
      cached_bytes_ -= block_bytes;
      count(data, block_bytes);
      return data;
    }
  }
  void* data = nullptr;
  try {
    data = allocate_fresh(rounded, nbytes);
  } catch (const Error&) {  // the cached blocks may be what is missing: give them back, try again
    empty_cache();
    data = allocate_fresh(rounded, nbytes);
  }
  std::lock_guard<std::mutex> lock(mutex_);
  count(data, rounded);
  return data;
}

void CachingAllocator::deallocate(void* data, std::size_t nbytes) {
  std::size_t block_bytes = rounded_size(nbytes);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (block_bytes >= min_cached_bytes) {  // the block may be larger than the request was
      const auto live = block_sizes_.find(data);
      assert(live != block_sizes_.end() && "a block this allocator did not hand out");
      block_bytes = live->second;
      block_sizes_.erase(live);
    }
    allocated_bytes_ -= block_bytes;
    if (enabled_ && block_bytes >= min_cached_bytes &&
        cached_bytes_ + block_bytes <= limit_bytes_) {
      free_blocks_.emplace(block_bytes, data);
      cached_bytes_ += block_bytes;
      return;
    }
  }
  std::free(data);
}

MemoryStats CachingAllocator::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return {allocated_bytes_, peak_allocated_bytes_, cached_bytes_};
}

void CachingAllocator::reset_peak() {
  std::lock_guard<std::mutex> lock(mutex_);
  peak_allocated_bytes_ = allocated_bytes_;
}

void CachingAllocator::empty_cache() {
  std::lock_guard<std::mutex> lock(mutex_);
  release_cached_locked();
}

void CachingAllocator::set_enabled(bool enabled) {
  std::lock_guard<std::mutex> lock(mutex_);
  enabled_ = enabled;
  if (!enabled) release_cached_locked();
}

void CachingAllocator::release_cached_locked() {
  for (const auto& [size, block] : free_blocks_) std::free(block);
  free_blocks_.clear();
  cached_bytes_ = 0;
}

}  // namespace normgrad::backend::cpu
