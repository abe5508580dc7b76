#pragma once
// CpuBackend: the Backend interface on host memory, with OpenMP for our own kernels and
// OpenBLAS for matrix products. Each op family is defined in its own file of this folder
// (copy_fill.cpp, unary.cpp, binary.cpp, random.cpp, reduce.cpp, matmul.cpp, softmax.cpp,
// norm.cpp, batch_norm.cpp, cross_entropy.cpp, adam.cpp, im2col.cpp,
// conv.cpp, pool.cpp, indexing.cpp, recurrent.cpp); this header only declares the class.
// Obtain the instance via cpu_backend().

#include "backends/backend.h"
#include "backends/caching_allocator.h"

namespace normgrad::backend::cpu {

class CpuBackend final : public Backend {
 public:
  CpuBackend();

  Device device() const override { return Device::cpu(); }

  void* allocate(std::size_t nbytes) override;
  void deallocate(void* data, std::size_t nbytes) override;
  void copy_to_host(void* host_dst, const void* src, std::size_t nbytes) override;
  void copy_from_host(void* dst, const void* host_src, std::size_t nbytes) override;
  MemoryStats memory_stats() const override { return allocator_.stats(); }
  void reset_peak_memory_stats() override { allocator_.reset_peak(); }
  void empty_cache() override { allocator_.empty_cache(); }
  void set_caching(bool enabled) override { allocator_.set_enabled(enabled); }

#include "backends/kernel_overrides.h"

  void set_num_threads(int threads) override;

 private:
  CachingAllocator allocator_;
};

}  // namespace normgrad::backend::cpu
