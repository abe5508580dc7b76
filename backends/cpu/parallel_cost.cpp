#include "backends/cpu/parallel_cost.h"

#include <strings.h>

#include <cstdlib>
#include <cstring>

namespace normgrad::backend::cpu {

bool threads_sleep_between_regions() {
  // OpenMP reads these once, as the program loads; so does this, once.
  static const bool sleep = [] {
    const char* policy = std::getenv("OMP_WAIT_POLICY");
    const char* spin = std::getenv("GOMP_SPINCOUNT");
    if (spin != nullptr && *spin != '\0') return std::strtoll(spin, nullptr, 10) == 0;
    return policy != nullptr && strcasecmp(policy, "passive") == 0;
  }();
  return sleep;
}

std::int64_t parallel_threshold() {
  return threads_sleep_between_regions() ? std::int64_t{1} << 19 : std::int64_t{32768};
}

}  // namespace normgrad::backend::cpu
