#pragma once
// Between the recorder and Profile: opening a profile, and gathering its records when it
// closes. Not for users; profile.h is theirs.

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "profiler/recorder.h"

namespace normgrad::profiler::detail {

struct Opened {
  int id = 0;
  std::int64_t start_ns = 0;
};

struct Collected {
  std::int64_t start_ns = 0, end_ns = 0;
  std::vector<OpRecord> ops{};  // by thread, each thread's in time order
  std::vector<SpanRecord> spans{};
  std::vector<MemorySample> memory{};
};

// Starts recording (if nothing was) with the module names `module_names` gives.
Opened open_profile(std::unordered_map<const void*, std::string> module_names);
// The records made since `opened`; recording stops when no other profile is open.
Collected close_profile(Opened opened);

}  // namespace normgrad::profiler::detail
