// The GPU's caching allocator as the user sees it through memory_stats(Device::cuda()):
// allocated, peak and cached bytes follow tensors as they are created and freed (the peak
// starts again when reset), a freed block serves the next request of its size, empty_cache()
// gives the cache back, caching can be switched off, and running out of memory is an Error that
// reports those numbers. Needs a GPU (test_cuda_device.cpp checks the error when there is none).

#include "cuda_parity.h"

using namespace normgrad;

namespace {

constexpr std::size_t four_mib = std::size_t{4} << 20;  // a multiple of the 2 MiB granule

}  // namespace

TEST_CASE("cuda memory statistics follow tensors as they are created and freed") {
  SKIP_WITHOUT_CUDA();
  const Device gpu = Device::cuda();
  set_memory_caching(gpu, true);
  empty_cache(gpu);
  CHECK(memory_stats(gpu).cached_bytes == 0);
  const MemoryStats before = memory_stats(gpu);
  const void* first_address = nullptr;
  {
    const Tensor big = zeros({1 << 20}, {.device = gpu});  // 4 MiB of float32
    first_address = big.storage()->data();
    const MemoryStats during = memory_stats(gpu);
    CHECK(during.allocated_bytes == before.allocated_bytes + four_mib);
    CHECK(during.peak_allocated_bytes >= during.allocated_bytes);
  }
  const MemoryStats after = memory_stats(gpu);
  CHECK(after.allocated_bytes == before.allocated_bytes);
  CHECK(after.cached_bytes >= four_mib);  // kept for reuse
  CHECK(after.peak_allocated_bytes >= before.allocated_bytes + four_mib);
  {
    const Tensor again = ones({1 << 20}, {.device = gpu});  // the same size, from the cache
    CHECK(again.storage()->data() == first_address);
    CHECK(memory_stats(gpu).cached_bytes == after.cached_bytes - four_mib);
    CHECK(again.sum().item() == doctest::Approx(1 << 20));  // and written afresh
  }
  empty_cache(gpu);
  CHECK(memory_stats(gpu).cached_bytes == 0);
  CHECK(memory_stats(gpu).allocated_bytes == before.allocated_bytes);
}

TEST_CASE("cuda small tensors take rounded blocks, and the peak stays at its high-water mark") {
  SKIP_WITHOUT_CUDA();
  const Device gpu = Device::cuda();
  empty_cache(gpu);
  const MemoryStats before = memory_stats(gpu);
  {
    const Tensor small = zeros({10}, {.device = gpu});  // 40 bytes: one rounded block
    const std::size_t taken = memory_stats(gpu).allocated_bytes - before.allocated_bytes;
    CHECK(taken >= 40);
    CHECK(taken <= 4096);
    const Tensor a = zeros({3 << 20}, {.device = gpu});  // 12 MiB
    const Tensor b = zeros({3 << 20}, {.device = gpu});
    CHECK(memory_stats(gpu).peak_allocated_bytes >= before.allocated_bytes + (24u << 20));
  }
  const MemoryStats after = memory_stats(gpu);
  CHECK(after.allocated_bytes == before.allocated_bytes);
  CHECK(after.peak_allocated_bytes >= before.allocated_bytes + (24u << 20));
  empty_cache(gpu);
}

TEST_CASE("cuda: the peak starts again from the bytes allocated when it is reset") {
  SKIP_WITHOUT_CUDA();
  const Device gpu = Device::cuda();
  { const Tensor big = zeros({4 << 20}, {.device = gpu}); }  // 16 MiB, gone again
  const MemoryStats high = memory_stats(gpu);
  CHECK(high.peak_allocated_bytes >= high.allocated_bytes + (16u << 20));
  reset_peak_memory_stats(gpu);
  const MemoryStats reset = memory_stats(gpu);
  CHECK(reset.peak_allocated_bytes == reset.allocated_bytes);
  { const Tensor small = zeros({1 << 20}, {.device = gpu}); }
  const MemoryStats after = memory_stats(gpu);
  CHECK(after.peak_allocated_bytes == reset.allocated_bytes + four_mib);
}

TEST_CASE("cuda caching off: freed blocks go straight back") {
  SKIP_WITHOUT_CUDA();
  const Device gpu = Device::cuda();
  set_memory_caching(gpu, false);
  CHECK(memory_stats(gpu).cached_bytes == 0);  // switching off also empties the cache
  { const Tensor big = zeros({1 << 20}, {.device = gpu}); }
  CHECK(memory_stats(gpu).cached_bytes == 0);
  {
    const Tensor x = testing::normal({256, 256}, 1).to(gpu);
    CHECK(std::isfinite((x * x).sum().item()));  // kernels run as usual
  }
  CHECK(memory_stats(gpu).cached_bytes == 0);
  set_memory_caching(gpu, true);
  { const Tensor big = zeros({1 << 20}, {.device = gpu}); }
  CHECK(memory_stats(gpu).cached_bytes >= four_mib);
  empty_cache(gpu);
  CHECK(memory_stats(gpu).cached_bytes == 0);
}

TEST_CASE("cuda out of memory is an Error that reports the allocator's numbers") {
  SKIP_WITHOUT_CUDA();
  const Device gpu = Device::cuda();
  const MemoryStats before = memory_stats(gpu);
  // 4 TiB: more than any GPU has.
  CHECK_ERROR(zeros({std::int64_t{1} << 40}, {.device = gpu}), "cuda:0", "out of memory",
              "allocated", "peak", "cached");
  CHECK(memory_stats(gpu).allocated_bytes == before.allocated_bytes);
  // The device stays usable.
  CHECK(ones({4}, {.device = gpu}).sum().item() == 4.0);
}
