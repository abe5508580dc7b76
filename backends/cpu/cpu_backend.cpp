// CpuBackend's memory (through its caching allocator), threads, and the cpu_backend()
// accessor of backends/dispatch.h.

#include "backends/cpu/cpu_backend.h"

#include <cblas.h>
#include <omp.h>

#include <cstring>

#include "backends/dispatch.h"
#include "core/error.h"

namespace normgrad::backend {

namespace cpu {

CpuBackend::CpuBackend() {
  // OpenMP reads OMP_NUM_THREADS at start-up; OpenBLAS gets the same count so that one
  // setting governs both.
  openblas_set_num_threads(omp_get_max_threads());
}

void* CpuBackend::allocate(std::size_t nbytes) { return allocator_.allocate(nbytes); }

void CpuBackend::deallocate(void* data, std::size_t nbytes) { allocator_.deallocate(data, nbytes); }

void CpuBackend::copy_to_host(void* host_dst, const void* src, std::size_t nbytes) {
  if (nbytes > 0) std::memcpy(host_dst, src, nbytes);
}

void CpuBackend::copy_from_host(void* dst, const void* host_src, std::size_t nbytes) {
  if (nbytes > 0) std::memcpy(dst, host_src, nbytes);
}

void CpuBackend::set_num_threads(int threads) { openblas_set_num_threads(threads); }

}  // namespace cpu

Backend& cpu_backend() {
  // Never destroyed: tensors owned by other static objects may be freed after it would be.
  static cpu::CpuBackend* backend = new cpu::CpuBackend();
  return *backend;
}

}  // namespace normgrad::backend
