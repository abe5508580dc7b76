// The CPU allocator: statistics (a peak that can be reset), reuse of cached blocks, and giving
// them back.

#include "helpers.h"

using namespace normgrad;

TEST_CASE("memory statistics follow allocations, and large blocks are reused") {
  set_memory_caching(Device::cpu(), true);
  empty_cache();
  const MemoryStats before = memory_stats();
  const void* first_address = nullptr;
  {
    Tensor big = zeros({1 << 20});  // 4 MiB: cached when freed
    first_address = big.storage()->data();
    const MemoryStats during = memory_stats();
    CHECK(during.allocated_bytes >= before.allocated_bytes + (4u << 20));
    CHECK(during.peak_allocated_bytes >= during.allocated_bytes);
  }
  const MemoryStats after = memory_stats();
  CHECK(after.allocated_bytes == before.allocated_bytes);
  CHECK(after.cached_bytes >= before.cached_bytes + (4u << 20));
  {
    Tensor again = ones({1 << 20});  // the same size comes back from the cache
    CHECK(again.storage()->data() == first_address);
    CHECK(memory_stats().cached_bytes == before.cached_bytes);
    CHECK(again.sum().item() == doctest::Approx(1 << 20));  // and is written afresh
  }
  empty_cache();
  CHECK(memory_stats().cached_bytes == 0);
}

TEST_CASE("a cached block serves smaller requests down to half its size") {
  set_memory_caching(Device::cpu(), true);
  empty_cache();
  const std::size_t block = std::size_t{4} << 20;
  const void* address = nullptr;
  {
    Tensor big = zeros({static_cast<std::int64_t>(block / 4)});
    address = big.storage()->data();
  }
  REQUIRE(memory_stats().cached_bytes == block);
  const std::size_t allocated_before = memory_stats().allocated_bytes;
  {
    Tensor smaller = ones({static_cast<std::int64_t>(block / 4 * 3 / 4)});  // 3 MiB
    CHECK(smaller.storage()->data() == address);
    CHECK(memory_stats().cached_bytes == 0);
    // The whole block counts as allocated while it is in use, and comes back whole.
    CHECK(memory_stats().allocated_bytes == allocated_before + block);
    CHECK(smaller.sum().item() == doctest::Approx(block / 4 * 3 / 4));
  }
  CHECK(memory_stats().cached_bytes == block);
  CHECK(memory_stats().allocated_bytes == allocated_before);
  {
    // Less than half the block: a fresh block, and the cached one stays for later.
    Tensor small = ones({static_cast<std::int64_t>(block / 4 * 3 / 8)});  // 1.5 MiB
    CHECK(small.storage()->data() != address);
    CHECK(memory_stats().cached_bytes == block);
  }
  empty_cache();
  CHECK(memory_stats().cached_bytes == 0);
}

TEST_CASE("with caching off, freed blocks go straight back") {
  set_memory_caching(Device::cpu(), false);
  { Tensor big = zeros({1 << 20}); }
  CHECK(memory_stats().cached_bytes == 0);
  set_memory_caching(Device::cpu(), true);
  if (!cuda::is_available()) {
    CHECK_ERROR(memory_stats(Device::cuda()), "cuda:0");
    return;
  }
  // The same on a GPU: with caching off, the device's block goes back at once.
  set_memory_caching(Device::cuda(), false);
  const std::size_t before = memory_stats(Device::cuda()).allocated_bytes;
  {
    Tensor big = zeros({1 << 20}, {.device = Device::cuda()});
    CHECK(memory_stats(Device::cuda()).allocated_bytes >= before + (4u << 20));
  }
  CHECK(memory_stats(Device::cuda()).allocated_bytes == before);
  CHECK(memory_stats(Device::cuda()).cached_bytes == 0);
  set_memory_caching(Device::cuda(), true);
}

TEST_CASE("the peak starts again from the bytes allocated when it is reset") {
  set_memory_caching(Device::cpu(), true);
  Tensor kept = zeros({1 << 18});     // 1 MiB, live throughout
  { Tensor big = zeros({1 << 22}); }  // 16 MiB, gone again
  const MemoryStats high = memory_stats();
  CHECK(high.peak_allocated_bytes >= high.allocated_bytes + (16u << 20));
  reset_peak_memory_stats();
  const MemoryStats reset = memory_stats();
  CHECK(reset.allocated_bytes == high.allocated_bytes);
  CHECK(reset.peak_allocated_bytes == reset.allocated_bytes);
  { Tensor small = zeros({1 << 19}); }  // 2 MiB
  const MemoryStats after = memory_stats();
  CHECK(after.peak_allocated_bytes >= reset.allocated_bytes + (2u << 20));
  CHECK(after.peak_allocated_bytes < reset.allocated_bytes + (16u << 20));
  CHECK(kept.numel() == 1 << 18);
}
