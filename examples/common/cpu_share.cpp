#include "cpu_share.h"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <string>
#include <thread>

namespace examples {

namespace {

double seconds(const timeval& time) { return time.tv_sec + time.tv_usec * 1e-6; }

}  // namespace

CpuSample sample_cpu() {
  CpuSample now;
  now.wall_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
  // The first line of /proc/stat: "cpu user nice system idle iowait irq softirq steal ...",
  // in clock ticks summed over all cores.
  std::ifstream stat("/proc/stat");
  std::string label;
  long long user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0, steal = 0;
  if (!(stat >> label >> user >> nice >> system >> idle >> iowait >> irq >> softirq >> steal) ||
      label != "cpu")
    return now;
  const double tick = static_cast<double>(::sysconf(_SC_CLK_TCK));
  if (tick <= 0) return now;
  now.busy_seconds = static_cast<double>(user + nice + system + irq + softirq + steal) / tick;
  rusage own{};
  if (::getrusage(RUSAGE_SELF, &own) != 0) return now;
  now.own_seconds = seconds(own.ru_utime) + seconds(own.ru_stime);
  now.valid = true;
  return now;
}

std::optional<double> other_processes_share(const CpuSample& start, const CpuSample& end,
                                            unsigned cores) {
  if (!start.valid || !end.valid || cores == 0) return std::nullopt;
  const double capacity = (end.wall_seconds - start.wall_seconds) * static_cast<double>(cores);
  if (capacity <= 0) return std::nullopt;
  const double others =
      (end.busy_seconds - start.busy_seconds) - (end.own_seconds - start.own_seconds);
  return std::clamp(others / capacity, 0.0, 1.0);
}

OtherProcessesMeter::OtherProcessesMeter() : start_(sample_cpu()) {}

std::optional<double> OtherProcessesMeter::fraction() const {
  return other_processes_share(start_, sample_cpu(),
                               std::max(1u, std::thread::hardware_concurrency()));
}

}  // namespace examples
