#include "profiler/trace.h"

#include <algorithm>
#include <cstdio>
#include <set>
#include <sstream>
#include <vector>

namespace normgrad::profiler {

namespace {

std::string quoted(const std::string& text) {
  std::string out = "\"";
  for (const char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char escaped[8];
      std::snprintf(escaped, sizeof escaped, "\\u%04x", c);
      out += escaped;
    } else {
      out += c;
    }
  }
  return out + '"';
}

std::string number(double value) {
  char text[40];
  std::snprintf(text, sizeof text, "%.3f", value);
  return text;
}

// A complete event, kept for sorting: on each thread by start, the longer (enclosing) first.
struct Event {
  int thread = 0;
  std::int64_t start_ns = 0, end_ns = 0;
  std::string json;
};

}  // namespace

std::string trace_json(const Profile& profile) {
  const std::int64_t origin = profile.start_ns();
  const auto micros = [&](std::int64_t ns) {
    return number(1e-3 * static_cast<double>(ns - origin));
  };
  const auto duration = [](std::int64_t start, std::int64_t end) {
    return number(1e-3 * static_cast<double>(end - start));
  };
  std::vector<Event> events;
  std::set<int> threads;
  for (const SpanRecord& span : profile.spans()) {
    threads.insert(span.thread);
    events.push_back({span.thread, span.start_ns, span.end_ns,
                      "{\"name\":" + quoted(span.name) + ",\"cat\":\"" +
                          (span.backward ? "module backward" : "module") +
                          "\",\"ph\":\"X\",\"pid\":0,\"tid\":" + std::to_string(span.thread) +
                          ",\"ts\":" + micros(span.start_ns) +
                          ",\"dur\":" + duration(span.start_ns, span.end_ns) + "}"});
  }
  for (const OpRecord& op : profile.ops()) {
    threads.insert(op.thread);
    const double seconds = 1e-9 * static_cast<double>(op.end_ns - op.start_ns);
    std::string args = "{\"shapes\":" + quoted(op.shapes) +
                       ",\"dtype\":" + quoted(std::string(to_string(op.dtype))) +
                       ",\"device\":" + quoted(op.device.str()) + ",\"bytes\":" + number(op.bytes) +
                       ",\"flops\":" + number(op.flops);
    if (seconds > 0)
      args += ",\"GB/s\":" + number(1e-9 * op.bytes / seconds) +
              ",\"GFLOP/s\":" + number(1e-9 * op.flops / seconds);
    if (op.backward_of != nullptr) args += ",\"backward of\":" + quoted(op.backward_of);
    args += "}";
    events.push_back({op.thread, op.start_ns, op.end_ns,
                      "{\"name\":" + quoted(op.kernel()) + ",\"cat\":" + quoted(op.family) +
                          ",\"ph\":\"X\",\"pid\":0,\"tid\":" + std::to_string(op.thread) +
                          ",\"ts\":" + micros(op.start_ns) + ",\"dur\":" +
                          duration(op.start_ns, op.end_ns) + ",\"args\":" + args + "}"});
  }
  std::stable_sort(events.begin(), events.end(), [](const Event& a, const Event& b) {
    if (a.thread != b.thread) return a.thread < b.thread;
    if (a.start_ns != b.start_ns) return a.start_ns < b.start_ns;
    return a.end_ns > b.end_ns;
  });

  std::ostringstream out;
  out << "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n";
  out << "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":0,\"args\":{\"name\":\"normgrad\"}}";
  for (const int thread : threads)
    out << ",\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":0,\"tid\":" << thread
        << ",\"args\":{\"name\":\"thread " << thread << "\"}}";
  for (const Event& event : events) out << ",\n" << event.json;
  for (const MemorySample& sample : profile.memory())
    out << ",\n{\"name\":" << quoted("memory " + sample.device.str())
        << ",\"ph\":\"C\",\"pid\":0,\"ts\":" << micros(sample.time_ns)
        << ",\"args\":{\"live bytes\":" << sample.live_bytes << "}}";
  out << "\n]}\n";
  return out.str();
}

}  // namespace normgrad::profiler
