#pragma once
// CudaBackend: the Backend interface on one GPU. Its memory comes from a caching allocator; its
// work goes to one stream of its own, in order; GEMMs go to cuBLAS and everything else to the
// kernels of this folder. Each op family's .cu file (elementwise.cu, random.cu, reduce.cu,
// matmul.cu, softmax.cu, norm.cu, batch_norm.cu, cross_entropy.cu, adam.cu, recurrent.cu,
// im2col.cu, conv.cu, pool.cu, indexing.cu)
// defines the methods of its family below: each makes the device current, checks its operands,
// picks the grid and queues its kernels on the stream. Obtain an instance through
// backend_for(Device::cuda(i)).

#include <atomic>
#include <cstdint>
#include <memory>

#include "backends/backend.h"
#include "backends/caching_allocator.h"
#include "backends/cuda/context.h"

namespace normgrad::backend::cuda {

class CudaBackend final : public Backend {
 public:
  explicit CudaBackend(int device);
  ~CudaBackend() override;
  CudaBackend(const CudaBackend&) = delete;
  CudaBackend& operator=(const CudaBackend&) = delete;

  Device device() const override { return Device::cuda(context_.device); }

  void* allocate(std::size_t nbytes) override;
  void deallocate(void* data, std::size_t nbytes) override;
  // Either may read or reuse the host buffer as soon as they return: copy_to_host waits for
  // the stream (counted in host_waits), copy_from_host does not need to (see its definition).
  void copy_to_host(void* host_dst, const void* src, std::size_t nbytes) override;
  void copy_from_host(void* dst, const void* host_src, std::size_t nbytes) override;
  MemoryStats memory_stats() const override { return allocator_->stats(); }
  void reset_peak_memory_stats() override { allocator_->reset_peak(); }
  void empty_cache() override;
  void set_caching(bool enabled) override { allocator_->set_enabled(enabled); }

#include "backends/kernel_overrides.h"

  // The GPU schedules its own threads; the host-side thread count does not apply.
  void set_num_threads(int) override {}

  // Waits until every kernel queued on this device so far has finished.
  // The host's waits for this device's results (normgrad::cuda::host_waits).
  std::int64_t host_waits() const { return host_waits_.load(std::memory_order_relaxed); }
  void synchronize();
  // The stream all of this device's work goes to, for libraries that queue work of their own
  // behind it (NCCL's collectives, distributed/).
  cudaStream_t stream() const { return context_.stream; }
  // What the family methods and kernels get: for graph capture (graph.cpp).
  const Context& context() const { return context_; }

 private:
  void release_handles() noexcept;
  void refuse_while_capturing(const char* what) const;  // throws `what` during a capture

  std::unique_ptr<CachingAllocator> allocator_;
  std::atomic<std::int64_t> host_waits_{0};
  Context context_;
};

}  // namespace normgrad::backend::cuda
