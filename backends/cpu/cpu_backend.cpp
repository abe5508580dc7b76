// CpuBackend's memory (host blocks through the caching allocator), threads, and the
// cpu_backend() accessor of backends/dispatch.h.

#include "backends/cpu/cpu_backend.h"

#include <cblas.h>
#include <omp.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "backends/dispatch.h"
#include "base/error.h"

namespace normgrad::backend {

namespace cpu {

namespace {

// OpenBLAS never starts threads of its own: normgrad's OpenMP threads share its products in
// fixed blocks (matmul.cpp), so that a product's bits do not depend on the thread count.
// OpenBLAS's OpenMP build sets OpenMP's thread count along with its own, so ours is put back.
void keep_openblas_single_threaded() {
  const int threads = omp_get_max_threads();
  openblas_set_num_threads(1);
  omp_set_num_threads(threads);
}

constexpr std::size_t line_alignment = 64;
constexpr std::size_t huge_page = std::size_t{2} << 20;
constexpr std::size_t cache_granule = std::size_t{64} << 10;
// glibc's own free lists serve smaller blocks well.
constexpr std::size_t min_cached_bytes = std::size_t{256} << 10;

std::size_t round_up(std::size_t nbytes, std::size_t multiple) {
  return (nbytes + multiple - 1) / multiple * multiple;
}

// aligned_alloc wants a multiple of the alignment, and a zero-byte request still gets a
// distinct, freeable block. Cached sizes are rounded more coarsely, so that nearby sizes share
// blocks.
std::size_t rounded_size(std::size_t nbytes) {
  if (nbytes >= huge_page) return round_up(nbytes, huge_page);
  if (nbytes >= min_cached_bytes) return round_up(nbytes, cache_granule);
  return nbytes == 0 ? line_alignment : round_up(nbytes, line_alignment);
}

// Host memory: 64-byte aligned blocks, those of 2 MiB and more aligned to 2 MiB and marked for
// transparent huge pages. glibc serves large requests with a fresh mmap, whose first write
// costs a page fault per 4 KiB page; huge pages cut that cost, and the cache removes it from the
// second use on (bench/NOTES.md, "Notes on the run above": output allocation).
class HostMemory final : public BlockSource {
 public:
  std::string name() const override { return "cpu"; }
  void* allocate(std::size_t bytes) override {
    const std::size_t alignment = bytes >= huge_page ? huge_page : line_alignment;
    void* data = std::aligned_alloc(alignment, bytes);
#ifdef MADV_HUGEPAGE
    // Advice only: where huge pages are disabled the call fails and nothing changes.
    if (data != nullptr && alignment == huge_page) madvise(data, bytes, MADV_HUGEPAGE);
#endif
    return data;
  }
  void free(void* block) override { std::free(block); }
  std::string out_of_memory(std::size_t requested, std::size_t, const MemoryStats&) const override {
    return detail::concat("cpu allocate: out of memory allocating ", requested, " bytes");
  }
};

// Blocks from 256 KiB are cached: a request takes the smallest that holds it, up to twice its
// size, so that a batch of shorter sentences reuses a longer batch's blocks. At most a quarter
// of physical memory, and 8 GiB, stays cached: enough for the working set of a training step.
CachePolicy host_cache_policy() {
  const long pages = sysconf(_SC_PHYS_PAGES), page_size = sysconf(_SC_PAGESIZE);
  const std::size_t physical = pages > 0 && page_size > 0 ? static_cast<std::size_t>(pages) *
                                                                static_cast<std::size_t>(page_size)
                                                          : std::size_t{4} << 30;
  return {.rounded_size = rounded_size,
          .min_cached_bytes = min_cached_bytes,
          .max_reuse_ratio = 2,
          .limit_bytes = std::min(physical / 4, std::size_t{8} << 30),
          .environment_switch = "NORMGRAD_CPU_CACHING"};
}

}  // namespace

CpuBackend::CpuBackend() : allocator_(std::make_unique<HostMemory>(), host_cache_policy()) {
  keep_openblas_single_threaded();
}

void* CpuBackend::allocate(std::size_t nbytes) { return allocator_.allocate(nbytes); }

void CpuBackend::deallocate(void* data, std::size_t nbytes) { allocator_.deallocate(data, nbytes); }

void CpuBackend::copy_to_host(void* host_dst, const void* src, std::size_t nbytes) {
  if (nbytes > 0) std::memcpy(host_dst, src, nbytes);
}

void CpuBackend::copy_from_host(void* dst, const void* host_src, std::size_t nbytes) {
  if (nbytes > 0) std::memcpy(dst, host_src, nbytes);
}

// OMP_NUM_THREADS and omp_set_num_threads govern every loop, BLAS products included (they run
// in normgrad's OpenMP loops); OpenBLAS itself stays at one thread.
void CpuBackend::set_num_threads(int) { keep_openblas_single_threaded(); }

}  // namespace cpu

Backend& cpu_backend() {
  // Never destroyed: tensors owned by other static objects may be freed after it would be.
  static cpu::CpuBackend* backend = new cpu::CpuBackend();
  return *backend;
}

}  // namespace normgrad::backend
