#pragma once
// A process's memory as the training-step benchmarks report it (Linux): its resident set now,
// and the peak of its resident set so far. Their twins in Python read the same two numbers, so
// "peak minus resident before the model was built" means the same on both sides.

#include <sys/resource.h>

#include <cstdint>
#include <fstream>

namespace normgrad::bench {

// /proc/self/statm's resident pages, in bytes.
inline std::int64_t resident_bytes() {
  std::ifstream status("/proc/self/statm");
  std::int64_t pages = 0, resident = 0;
  status >> pages >> resident;
  return resident * 4096;
}

// getrusage's ru_maxrss (KiB on Linux), in bytes.
inline std::int64_t peak_resident_bytes() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<std::int64_t>(usage.ru_maxrss) * 1024;
}

}  // namespace normgrad::bench
