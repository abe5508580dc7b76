// CpuBackend's memory, threads, and the cpu_backend() accessor of backends/dispatch.h.
//
// Allocations are 64-byte aligned (one cache line, and the widest vector register) so that
// vector loads of a fresh tensor never straddle lines.

#include "backends/cpu/cpu_backend.h"

#include <cblas.h>
#include <omp.h>

#include <cstdlib>
#include <cstring>
#include "backends/dispatch.h"
#include "core/error.h"

namespace normgrad::backend {

namespace cpu {

namespace {
constexpr std::size_t alignment = 64;
}  // namespace

CpuBackend::CpuBackend() {
  // OpenMP reads OMP_NUM_THREADS at start-up; OpenBLAS gets the same count so that one
  // setting governs both.
  openblas_set_num_threads(omp_get_max_threads());
}

void* CpuBackend::allocate(std::size_t nbytes) {
  // aligned_alloc wants a size that is a multiple of the alignment, and a zero-byte request
  // must still return a distinct, freeable pointer: round up, with at least one line.
  const std::size_t rounded = nbytes == 0 ? alignment : (nbytes + alignment - 1) / alignment * alignment;
  void* data = std::aligned_alloc(alignment, rounded);
  NG_CHECK(data != nullptr, "cpu allocate", "out of memory allocating ", nbytes, " bytes");
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
