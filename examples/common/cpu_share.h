#pragma once
// How much of the machine other processes took while a run trained. Times per step mean
// little on a shared machine unless one knows that: on 2 cores, a compiler running beside
// the program can double them. Linux only (/proc/stat); elsewhere the share is unknown.

#include <optional>

namespace examples {

// What the machine and this process had used up to one moment.
struct CpuSample {
  double busy_seconds = 0;  // all processes, all cores: /proc/stat less idle and iowait
  double own_seconds = 0;   // this process, user + system (getrusage)
  double wall_seconds = 0;  // a steady clock
  bool valid = false;       // false where /proc/stat could not be read
};

CpuSample sample_cpu();

// The CPU time other processes used between two samples, as a fraction of the `cores`'
// time over the interval: (busy - own) / (wall * cores), clamped to [0, 1] because the
// kernel's 10 ms ticks make a short interval come out a little off. nullopt when a sample is
// invalid or no time passed.
std::optional<double> other_processes_share(const CpuSample& start, const CpuSample& end,
                                            unsigned cores);

// Starts measuring at construction; fraction() is the share since then.
class OtherProcessesMeter {
 public:
  OtherProcessesMeter();
  std::optional<double> fraction() const;

 private:
  CpuSample start_;
};

// Returns what `work()` returns, and sets `other_share` to the share of the CPU other
// processes took while it ran.
template <class Work>
auto measure_other_processes(std::optional<double>& other_share, const Work& work) {
  const OtherProcessesMeter meter;
  auto result = work();
  other_share = meter.fraction();
  return result;
}

}  // namespace examples
