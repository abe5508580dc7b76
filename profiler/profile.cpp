#include "profiler/profile.h"

#include <utility>

#include "base/error.h"

namespace normgrad::profiler {

Profile::Profile(std::unordered_map<const void*, std::string> module_names)
    : opened_(detail::open_profile(std::move(module_names))) {
  records_.start_ns = opened_.start_ns;
}

Profile::~Profile() { close(); }

void Profile::close() {
  if (!open_) return;
  records_ = detail::close_profile(opened_);
  open_ = false;
}

const std::vector<OpRecord>& Profile::ops() const {
  NG_CHECK(!open_, "profiler", "the profile is still open: close() it before reading it");
  return records_.ops;
}

const std::vector<SpanRecord>& Profile::spans() const {
  NG_CHECK(!open_, "profiler", "the profile is still open: close() it before reading it");
  return records_.spans;
}

const std::vector<MemorySample>& Profile::memory() const {
  NG_CHECK(!open_, "profiler", "the profile is still open: close() it before reading it");
  return records_.memory;
}

std::int64_t Profile::end_ns() const {
  NG_CHECK(!open_, "profiler", "the profile is still open: close() it before reading it");
  return records_.end_ns;
}

}  // namespace normgrad::profiler
