// CpuBackend's memory (through its caching allocator), threads, and the cpu_backend()
// accessor of backends/dispatch.h.

#include "backends/cpu/cpu_backend.h"

#include <cblas.h>
#include <omp.h>

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

}  // namespace

CpuBackend::CpuBackend() { keep_openblas_single_threaded(); }

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
