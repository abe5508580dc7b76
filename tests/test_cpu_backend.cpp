// The CPU backend as a whole, beyond any one op family: its own memory (aligned blocks, zero
// bytes, copies to and from the host) and the errors its kernels raise for what they cannot do.
// Each op family's CPU kernels are tested in the CPU section of its test_<family>.cpp.

#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "backends/cpu/parallel_cost.h"
#include "backends/dispatch.h"
#include "base/error.h"
#include "cpu_kernel_buffers.h"

using namespace normgrad;
using backend::UnaryOp;

using namespace testing::cpu_kernels;

TEST_CASE("cpu memory: aligned allocations, zero bytes, host copies") {
  for (std::size_t bytes : {std::size_t{0}, std::size_t{1}, std::size_t{100}, std::size_t{4096}}) {
    void* data = cpu().allocate(bytes);
    CHECK(data != nullptr);
    CHECK(reinterpret_cast<std::uintptr_t>(data) % 64 == 0);
    cpu().deallocate(data, bytes);
  }
  std::vector<float> host{1, 2, 3}, back(3);
  void* device = cpu().allocate(12);
  cpu().copy_from_host(device, host.data(), 12);
  cpu().copy_to_host(back.data(), device, 12);
  cpu().deallocate(device, 12);
  CHECK(back == host);
}

TEST_CASE("cpu kernels refuse what they cannot do with normgrad::Error") {
  std::vector<float> data(1);
  const Shape too_many_dims(17, 2);
  std::vector<float> big(1 << 17);
  CHECK_THROWS_WITH(cpu().fill(view(big, too_many_dims), 0.0), doctest::Contains("dims"));
  std::vector<std::int64_t> integers(1);
  CHECK_THROWS_WITH(cpu().softmax_backward(view(integers, {1}), view(integers, {1}),
                                           view(integers, {1}), 0, true),
                    doctest::Contains("cpu softmax_backward"));
  CHECK_THROWS_AS(cpu().unary(UnaryOp::Neg, view(data, {1}), view(integers, {1}), 0, 0),
                  normgrad::Error);
}

TEST_CASE("a parallel region needs more work when idle threads sleep than when they spin") {
  const char* policy = std::getenv("OMP_WAIT_POLICY");
  const char* spin = std::getenv("GOMP_SPINCOUNT");
  const bool sleeping = spin != nullptr && *spin != '\0'
                            ? std::string(spin) == "0"
                            : policy != nullptr && std::string(policy) == "passive";
  CHECK(backend::cpu::threads_sleep_between_regions() == sleeping);
  CHECK(backend::cpu::parallel_threshold() == (sleeping ? 524288 : 32768));
  CHECK(backend::cpu::macs_per_thread() ==
        std::max<std::int64_t>(std::int64_t{1} << 20, backend::cpu::macs_per_element *
                                                          backend::cpu::parallel_threshold()));
}
