#pragma once
// A profile as a trace in the Chrome Trace Event Format (JSON), which Perfetto
// (ui.perfetto.dev) and chrome://tracing open: a track per thread, each kernel a complete
// event ("ph": "X") with its shapes, dtype, device, bytes, operations and rates as arguments,
// the module spans around them, and each device's live bytes as a counter track ("ph": "C").
// Times are microseconds from the profile's start.

#include <string>

#include "profiler/profile.h"

namespace normgrad::profiler {

std::string trace_json(const Profile& profile);

}  // namespace normgrad::profiler
