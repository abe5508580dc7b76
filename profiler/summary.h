#pragma once
// A profile summed up: a row per kernel (and pass, and optionally shapes), with its calls, its
// time and share of the profile, its bytes and floating-point rates, and those rates as shares
// of the machine's ceilings, which say whether memory or arithmetic bounds it.
//
//   kernel                     pass      calls   total ms  share  mean us    GB/s  GFLOP/s ...
//   matmul                     forward      12     41.203  38.1%   3433.6    12.4    96.10 ...

#include <cstdint>
#include <string>
#include <vector>

#include "profiler/profile.h"

namespace normgrad::profiler {

// The machine's limits an op's rates are held against: the bandwidth of a large copy and the
// rate of a large float32 GEMM, as measured on it. 0: not known.
struct Ceilings {
  double copy_bytes_per_second = 0;
  double gemm_flops_per_second = 0;
};

struct SummaryOptions {
  bool by_shape = false;  // a row per kernel, pass and shapes
  std::size_t top = 0;    // the rows of most time only (0: all)
  Ceilings ceilings{};
};

struct SummaryRow {
  std::string kernel;  // "binary.mul", "norm_forward.rms"
  std::string family;
  bool backward = false;
  std::string shapes;  // with by_shape
  std::int64_t calls = 0;
  double seconds = 0, bytes = 0, flops = 0;

  double bytes_per_second() const { return seconds > 0 ? bytes / seconds : 0; }
  double flops_per_second() const { return seconds > 0 ? flops / seconds : 0; }
};

// The rows, most time first.
std::vector<SummaryRow> summarize(const Profile& profile, const SummaryOptions& options = {});

// The most bytes a device held in live tensors while the profile was open, and the kernel that
// the allocation reaching it was made for: the next kernel its thread ran (an op allocates its
// output, then runs its kernel into it).
struct MemoryPeak {
  Device device{};
  std::size_t bytes = 0;
  std::string kernel{};  // "norm_forward.rms (forward) [64,512] [64] [64] <- [64,512] [512]"
};
std::vector<MemoryPeak> memory_peaks(const Profile& profile);

// What bounds a row on this machine: "memory" when it does fewer operations per byte than the
// ceilings' ratio, "arithmetic" when more, "" without ceilings or counts.
std::string bound_by(const SummaryRow& row, const Ceilings& ceilings);

// The table as text, with a last line for the profile's time outside the kernels (the op
// layer, autograd, allocation), so that the shares add up to the whole, and each device's
// memory peak; and as CSV, a row per summary row.
std::string summary_table(const Profile& profile, const SummaryOptions& options = {});
std::string summary_csv(const Profile& profile, const SummaryOptions& options = {});

}  // namespace normgrad::profiler
