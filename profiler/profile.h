#pragma once
// A profile: every kernel that runs while it is open, on every thread and device, with its
// time, bytes and floating-point operations, nested under the spans of the modules that ran it.
//
//   normgrad::profiler::Profile profile(normgrad::nn::module_names(model));
//   train_step();
//   profile.close();
//   std::cout << normgrad::profiler::summary_table(profile, {.top = 20});
//   std::ofstream("step.trace.json") << normgrad::profiler::trace_json(profile);  // for Perfetto
//
// Profiles may be open on several threads at once, and inside one another: each holds what
// ran while it was open.

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "profiler/collect.h"
#include "profiler/recorder.h"

namespace normgrad::profiler {

class Profile {
 public:
  // Opens the profile. `module_names`: each module's name by its address, for its spans
  // (nn::module_names(model) lists a model's); a module not named here is named by its type.
  explicit Profile(std::unordered_map<const void*, std::string> module_names = {});
  ~Profile();
  Profile(const Profile&) = delete;
  Profile& operator=(const Profile&) = delete;

  // Stops recording into this profile and gathers its records; again, it does nothing.
  void close();
  bool is_open() const { return open_; }

  // What it recorded; an Error while it is open.
  const std::vector<OpRecord>& ops() const;
  const std::vector<SpanRecord>& spans() const;
  const std::vector<MemorySample>& memory() const;
  std::int64_t start_ns() const { return records_.start_ns; }
  std::int64_t end_ns() const;
  double seconds() const { return 1e-9 * static_cast<double>(end_ns() - start_ns()); }

 private:
  detail::Opened opened_;
  detail::Collected records_;
  bool open_ = true;
};

}  // namespace normgrad::profiler
