#pragma once
// What a profile records, and the cheap switch that says whether anything records at all.
//
// Every kernel an op runs passes through the one dispatch point (backends/dispatch.h). While a
// Profile (profile.h) is open, that point hands out a recording twin of the device's backend
// (backends/profiling_backend.h), which times each kernel and counts its bytes and
// floating-point operations into an OpRecord. Around the kernels, the layers above name what
// they run: a module's forward opens a span (ModuleSpan, from nn/), and the autograd engine
// says which op's backward is running (BackwardScope). With no profile open, an op pays one
// relaxed atomic load (`recording()`) and nothing else.
//
// Records go to a buffer of the thread that ran the op, so OpenMP's threads and a program's own
// threads record side by side; a Profile gathers them when it closes.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>

#include "base/device.h"
#include "base/dtype.h"

namespace normgrad::profiler {

namespace detail {
inline std::atomic<int> open_profiles{0};
}

// Whether any profile is open on any thread.
inline bool recording() { return detail::open_profiles.load(std::memory_order_relaxed) > 0; }

// Nanoseconds on the steady clock, the one time line of every record.
inline std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// One kernel run.
struct OpRecord {
  const char* name = "";     // the kernel: "matmul", "binary", "norm_forward"
  const char* variant = "";  // which of its ops, where it has several: "mul" of "binary"
  const char* family = "";   // its op family: "matmul", "elementwise", "norm"
  std::string shapes{};  // its operands' shapes, outputs first: "[64,512] <- [64,256] [256,512]"
  DType dtype = DType::Float32;  // of its first output
  Device device{};
  // The backward node that ran it ("MulBackward"), or null in a forward pass.
  const char* backward_of = nullptr;
  int span = -1;   // the innermost open span on its thread (an index into Profile::spans())
  int thread = 0;  // numbered from 0 in the order threads first recorded
  std::int64_t start_ns = 0, end_ns = 0;
  double bytes = 0;  // read and written, each distinct element once
  double flops = 0;  // floating-point operations, as backends/profiling_backend.cpp counts them

  // The kernel with its variant: "binary.mul", "matmul".
  std::string kernel() const {
    return variant[0] == '\0' ? std::string(name) : std::string(name) + "." + variant;
  }
};

// A named stretch of time on one thread that ops nest under: a module's forward, or the same
// module's part of a backward pass.
struct SpanRecord {
  std::string name{};  // "encoder.layers.0.norm1"
  int parent = -1;     // the span it opened inside, on its thread
  int thread = 0;
  bool backward = false;
  std::int64_t start_ns = 0, end_ns = 0;
};

// A sample of a device's live bytes, taken at each allocation and free.
struct MemorySample {
  Device device{};
  std::int64_t time_ns = 0;
  std::size_t live_bytes = 0;
  int thread = 0;  // that allocated or freed
};

// Appends to the calling thread's buffer; a no-op when no profile is open.
void record_op(OpRecord record);
void record_memory(Device device, std::size_t live_bytes);

// The innermost span open on this thread, and which backward node runs on it (null in a
// forward pass): what a new OpRecord is filed under.
int current_span();
const char* current_backward();

// The engine's mark around one backward node: the kernels it runs are that node's, filed
// under a backward span of the module the node was made in (`span`, from current_span_ref()
// when it was made), if it was made in one under this profile.
class BackwardScope;

// A named span on this thread from construction to destruction; nothing when no profile is
// open.
class Span {
 public:
  explicit Span(const std::string& name, bool backward = false);
  ~Span();
  Span(const Span&) = delete;
  Span& operator=(const Span&) = delete;

 private:
  void open(const std::string& name, bool backward);
  friend class ModuleSpan;
  friend class BackwardScope;
  Span() = default;
  int index_ = -1;
  std::uint32_t epoch_ = 0;  // of the profiles it opened under
};

// A module's forward as a span named by its place in the model ("encoder.layers.0.norm1"),
// from the names the open profile was given (Profile's `modules`), or by `type_name` for a
// module it was not given. Nothing when no profile is open.
class ModuleSpan {
 public:
  ModuleSpan(const void* module, const char* type_name);

 private:
  Span span_;
};

// The span an autograd node was made in, kept by the node so that its backward is filed under
// the same module. Spans are numbered afresh whenever every profile has closed; `epoch` tells
// a node made under an earlier profile.
struct SpanRef {
  int index = -1;
  std::uint32_t epoch = 0;
};
SpanRef current_span_ref();
// The span's name, or "" when it belongs to a profile that has closed (or there is none).
std::string span_name(SpanRef span);

class BackwardScope {
 public:
  explicit BackwardScope(const char* node_name, SpanRef span = {});
  ~BackwardScope();
  BackwardScope(const BackwardScope&) = delete;
  BackwardScope& operator=(const BackwardScope&) = delete;

 private:
  bool active_ = false;
  const char* previous_ = nullptr;
  Span span_;
};

}  // namespace normgrad::profiler
