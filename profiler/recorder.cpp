#include "profiler/recorder.h"

#include <algorithm>
#include <deque>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <utility>
#include <vector>

#include "profiler/collect.h"

namespace normgrad::profiler {

namespace {

// One thread's records; only that thread appends, a closing profile reads.
struct ThreadBuffer {
  std::mutex mutex;
  int thread = 0;
  std::vector<OpRecord> ops;
};

// Everything the open profiles share. Spans and memory samples are rare beside ops and go to
// one table under the lock; ops go to their thread's buffer.
struct Recorder {
  std::mutex mutex;
  std::deque<std::unique_ptr<ThreadBuffer>> buffers;  // kept for the program's life
  std::vector<SpanRecord> spans;
  std::vector<MemorySample> memory;
  std::atomic<std::uint32_t> epoch{1};  // counts the times every profile closed
  // Each open profile's module names, by its number, innermost last.
  std::vector<std::pair<int, std::unordered_map<const void*, std::string>>> module_names;
  int profiles_opened = 0;
};

Recorder& recorder() {
  static Recorder* r = new Recorder;  // never destroyed: threads may record while others exit
  return *r;
}

// This thread's place in the records: its buffer, its open spans and its backward node.
struct ThreadState {
  ThreadBuffer* buffer = nullptr;
  std::vector<int> spans;
  std::uint32_t spans_epoch = 0;  // the epoch `spans` belong to
  const char* backward = nullptr;
};
thread_local ThreadState this_thread;

ThreadBuffer& thread_buffer() {
  if (this_thread.buffer == nullptr) {
    Recorder& r = recorder();
    const std::lock_guard<std::mutex> lock(r.mutex);
    r.buffers.push_back(std::make_unique<ThreadBuffer>());
    r.buffers.back()->thread = static_cast<int>(r.buffers.size()) - 1;
    this_thread.buffer = r.buffers.back().get();
  }
  return *this_thread.buffer;
}

// This thread's open spans, forgotten when they belong to profiles that have all closed.
std::vector<int>& open_spans(std::uint32_t epoch) {
  if (this_thread.spans_epoch != epoch) {
    this_thread.spans.clear();
    this_thread.spans_epoch = epoch;
  }
  return this_thread.spans;
}

}  // namespace

void record_op(OpRecord record) {
  if (!recording()) return;
  ThreadBuffer& buffer = thread_buffer();
  record.thread = buffer.thread;
  const std::lock_guard<std::mutex> lock(buffer.mutex);
  buffer.ops.push_back(std::move(record));
}

void record_memory(Device device, std::size_t live_bytes) {
  if (!recording()) return;
  const int thread = thread_buffer().thread;  // before the lock, which registering takes
  Recorder& r = recorder();
  const std::lock_guard<std::mutex> lock(r.mutex);
  r.memory.push_back({device, now_ns(), live_bytes, thread});
}

int current_span() {
  if (!recording()) return -1;
  const std::vector<int>& spans = open_spans(recorder().epoch.load());
  return spans.empty() ? -1 : spans.back();
}

const char* current_backward() { return this_thread.backward; }

BackwardScope::BackwardScope(const char* node_name, SpanRef span) {
  if (!recording()) return;
  active_ = true;
  previous_ = this_thread.backward;
  this_thread.backward = node_name;
  const std::string module = span_name(span);
  if (!module.empty()) span_.open(module, /*backward=*/true);
}

BackwardScope::~BackwardScope() {
  if (active_) this_thread.backward = previous_;
}

Span::Span(const std::string& name, bool backward) {
  if (recording()) open(name, backward);
}

void Span::open(const std::string& name, bool backward) {
  const int thread = thread_buffer().thread;  // before the lock, which registering takes
  Recorder& r = recorder();
  const std::lock_guard<std::mutex> lock(r.mutex);
  epoch_ = r.epoch;
  std::vector<int>& spans = open_spans(epoch_);
  index_ = static_cast<int>(r.spans.size());
  r.spans.push_back({.name = name,
                     .parent = spans.empty() ? -1 : spans.back(),
                     .thread = thread,
                     .backward = backward,
                     .start_ns = now_ns()});
  spans.push_back(index_);
}

Span::~Span() {
  if (index_ < 0) return;
  Recorder& r = recorder();
  const std::lock_guard<std::mutex> lock(r.mutex);
  // A span of profiles that have all closed since it opened is gone with them.
  if (epoch_ != r.epoch) return;
  std::vector<int>& spans = open_spans(epoch_);
  if (spans.empty() || spans.back() != index_) return;
  spans.pop_back();
  r.spans[static_cast<std::size_t>(index_)].end_ns = now_ns();
}

ModuleSpan::ModuleSpan(const void* module, const char* type_name) {
  if (!recording()) return;
  std::string name = type_name;
  {
    Recorder& r = recorder();
    const std::lock_guard<std::mutex> lock(r.mutex);
    for (auto names = r.module_names.rbegin(); names != r.module_names.rend(); ++names) {
      const auto found = names->second.find(module);
      if (found != names->second.end()) {
        name = found->second;
        break;
      }
    }
  }
  span_.open(name, /*backward=*/false);
}

SpanRef current_span_ref() {
  if (!recording()) return {};
  const std::uint32_t epoch = recorder().epoch.load();
  const std::vector<int>& spans = open_spans(epoch);
  return {spans.empty() ? -1 : spans.back(), epoch};
}

std::string span_name(SpanRef span) {
  if (span.index < 0 || !recording()) return "";
  Recorder& r = recorder();
  const std::lock_guard<std::mutex> lock(r.mutex);
  if (span.epoch != r.epoch || span.index >= static_cast<int>(r.spans.size())) return "";
  return r.spans[static_cast<std::size_t>(span.index)].name;
}

namespace detail {

Opened open_profile(std::unordered_map<const void*, std::string> module_names) {
  Recorder& r = recorder();
  const std::lock_guard<std::mutex> lock(r.mutex);
  const int id = r.profiles_opened++;
  r.module_names.emplace_back(id, std::move(module_names));
  open_profiles.fetch_add(1, std::memory_order_relaxed);
  return {.id = id, .start_ns = now_ns()};
}

Collected close_profile(Opened opened) {
  const std::int64_t start_ns = opened.start_ns;
  Recorder& r = recorder();
  const std::int64_t end_ns = now_ns();
  const std::lock_guard<std::mutex> lock(r.mutex);
  Collected out{.start_ns = start_ns, .end_ns = end_ns};
  // This profile's spans, renumbered from 0; their ops point at the new numbers.
  std::unordered_map<int, int> renumbered;
  for (std::size_t i = 0; i < r.spans.size(); ++i) {
    const SpanRecord& span = r.spans[i];
    if (span.start_ns < start_ns) continue;
    renumbered[static_cast<int>(i)] = static_cast<int>(out.spans.size());
    out.spans.push_back(span);
    if (out.spans.back().end_ns == 0) out.spans.back().end_ns = end_ns;  // still open
  }
  const auto renumber = [&](int span) {
    const auto found = renumbered.find(span);
    return found == renumbered.end() ? -1 : found->second;
  };
  for (SpanRecord& span : out.spans) span.parent = renumber(span.parent);
  for (const auto& buffer : r.buffers) {
    const std::lock_guard<std::mutex> buffer_lock(buffer->mutex);
    for (const OpRecord& op : buffer->ops) {
      if (op.start_ns < start_ns) continue;
      out.ops.push_back(op);
      out.ops.back().span = renumber(op.span);
    }
  }
  for (const MemorySample& sample : r.memory)
    if (sample.time_ns >= start_ns) out.memory.push_back(sample);

  std::erase_if(r.module_names, [&](const auto& names) { return names.first == opened.id; });
  if (open_profiles.fetch_sub(1, std::memory_order_relaxed) == 1) {
    // The last profile closed: the records start afresh for the next.
    for (const auto& buffer : r.buffers) {
      const std::lock_guard<std::mutex> buffer_lock(buffer->mutex);
      buffer->ops.clear();
    }
    r.spans.clear();
    r.memory.clear();
    ++r.epoch;
  }
  return out;
}

}  // namespace detail

}  // namespace normgrad::profiler
