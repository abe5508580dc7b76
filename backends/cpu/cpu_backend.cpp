// CpuBackend's memory, threads, and the cpu_backend() accessor of backends/dispatch.h.
//
// Allocations are 64-byte aligned (one cache line, and the widest vector register) so that
// vector loads of a fresh tensor never straddle lines. Allocations of 2 MiB and more are
// aligned to 2 MiB and marked for transparent huge pages: glibc serves them with a fresh mmap,
// and the first write to fresh memory costs one page fault per 4 KiB page otherwise, which
// made an op on 64 MiB tensors several times slower than its arithmetic on the machine this
// was written on (a 64 MiB memcpy into a fresh buffer: 29 ms with 4 KiB pages, 6 ms with huge
// pages, 3.7 ms into memory already mapped).

#include "backends/cpu/cpu_backend.h"

#include <cblas.h>
#include <omp.h>
#include <sys/mman.h>

#include <cstdlib>
#include <cstring>

#include "backends/dispatch.h"
#include "core/error.h"

namespace normgrad::backend {

namespace cpu {

namespace {
constexpr std::size_t line_alignment = 64;
constexpr std::size_t huge_page = std::size_t{2} << 20;
}  // namespace

CpuBackend::CpuBackend() {
  // OpenMP reads OMP_NUM_THREADS at start-up; OpenBLAS gets the same count so that one
  // setting governs both.
  openblas_set_num_threads(omp_get_max_threads());
}

void* CpuBackend::allocate(std::size_t nbytes) {
  // aligned_alloc wants a size that is a multiple of the alignment, and a zero-byte request
  // must still return a distinct, freeable pointer: round up, to at least one alignment unit.
  const std::size_t alignment = nbytes >= huge_page ? huge_page : line_alignment;
  const std::size_t rounded =
      nbytes == 0 ? alignment : (nbytes + alignment - 1) / alignment * alignment;
  void* data = std::aligned_alloc(alignment, rounded);
  NG_CHECK(data != nullptr, "cpu allocate", "out of memory allocating ", nbytes, " bytes");
#ifdef MADV_HUGEPAGE
  // Advice only: where huge pages are disabled the call fails and nothing changes.
  if (alignment == huge_page) madvise(data, rounded, MADV_HUGEPAGE);
#endif
  return data;
}

void CpuBackend::deallocate(void* data, std::size_t /*nbytes*/) { std::free(data); }

void CpuBackend::copy_to_host(void* host_dst, const void* src, std::size_t nbytes) {
  if (nbytes > 0) std::memcpy(host_dst, src, nbytes);
}

void CpuBackend::copy_from_host(void* dst, const void* host_src, std::size_t nbytes) {
  if (nbytes > 0) std::memcpy(dst, host_src, nbytes);
}

void CpuBackend::set_num_threads(int threads) { openblas_set_num_threads(threads); }

}  // namespace cpu

Backend& cpu_backend() {
  static cpu::CpuBackend backend;
  return backend;
}

}  // namespace normgrad::backend
