#include "profiler/summary.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <sstream>
#include <tuple>

namespace normgrad::profiler {

namespace {

std::string format(const char* format, double value) {
  char text[64];
  std::snprintf(text, sizeof text, format, value);
  return text;
}

// A rate as a share of its ceiling, or "" when either is unknown.
std::string share_of(double rate, double ceiling) {
  return rate > 0 && ceiling > 0 ? format("%.1f%%", 100 * rate / ceiling) : "";
}

std::string csv_field(const std::string& text) {
  if (text.find_first_of(",\"\n") == std::string::npos) return text;
  std::string quoted = "\"";
  for (const char c : text) {
    if (c == '"') quoted += '"';
    quoted += c;
  }
  return quoted + '"';
}

double total_seconds(const std::vector<SummaryRow>& rows) {
  double total = 0;
  for (const SummaryRow& row : rows) total += row.seconds;
  return total;
}

}  // namespace

std::vector<SummaryRow> summarize(const Profile& profile, const SummaryOptions& options) {
  std::map<std::tuple<std::string, bool, std::string>, SummaryRow> rows;
  for (const OpRecord& op : profile.ops()) {
    const bool backward = op.backward_of != nullptr;
    const std::string kernel = op.kernel();
    SummaryRow& row = rows[{kernel, backward, options.by_shape ? op.shapes : std::string()}];
    if (row.calls == 0) {
      row.kernel = kernel;
      row.family = op.family;
      row.backward = backward;
      if (options.by_shape) row.shapes = op.shapes;
    }
    ++row.calls;
    row.seconds += 1e-9 * static_cast<double>(op.end_ns - op.start_ns);
    row.bytes += op.bytes;
    row.flops += op.flops;
  }
  std::vector<SummaryRow> sorted;
  for (auto& entry : rows) sorted.push_back(std::move(entry.second));
  std::stable_sort(sorted.begin(), sorted.end(),
                   [](const SummaryRow& a, const SummaryRow& b) { return a.seconds > b.seconds; });
  if (options.top > 0 && sorted.size() > options.top) sorted.resize(options.top);
  return sorted;
}

std::vector<MemoryPeak> memory_peaks(const Profile& profile) {
  std::vector<MemoryPeak> peaks;
  std::vector<const MemorySample*> at;  // the sample of each peak
  for (const MemorySample& sample : profile.memory()) {
    std::size_t d = 0;
    while (d < peaks.size() && peaks[d].device != sample.device) ++d;
    if (d == peaks.size()) {
      peaks.push_back({.device = sample.device});
      at.push_back(nullptr);
    }
    if (at[d] == nullptr || sample.live_bytes > peaks[d].bytes) {
      peaks[d].bytes = sample.live_bytes;
      at[d] = &sample;
    }
  }
  for (std::size_t d = 0; d < peaks.size(); ++d) {
    const OpRecord* next = nullptr;
    for (const OpRecord& op : profile.ops())
      if (op.thread == at[d]->thread && op.start_ns >= at[d]->time_ns &&
          (next == nullptr || op.start_ns < next->start_ns))
        next = &op;
    if (next != nullptr)
      peaks[d].kernel =
          next->kernel() + (next->backward_of ? " (backward) " : " (forward) ") + next->shapes;
  }
  return peaks;
}

std::string bound_by(const SummaryRow& row, const Ceilings& ceilings) {
  if (ceilings.copy_bytes_per_second <= 0 || ceilings.gemm_flops_per_second <= 0 || row.bytes <= 0)
    return "";
  const double balance = ceilings.gemm_flops_per_second / ceilings.copy_bytes_per_second;
  return row.flops / row.bytes < balance ? "memory" : "arithmetic";
}

std::string summary_table(const Profile& profile, const SummaryOptions& options) {
  const std::vector<SummaryRow> rows = summarize(profile, options);
  const std::vector<SummaryRow> all = summarize(profile, {.by_shape = false});
  const double wall = profile.seconds();
  std::ostringstream out;
  char line[512];
  std::snprintf(line, sizeof line, "%-32s %-8s %7s %10s %6s %10s %8s %9s %7s %7s %-10s%s\n",
                "kernel", "pass", "calls", "total ms", "share", "mean us", "GB/s", "GFLOP/s",
                "of copy", "of GEMM", "bound", options.by_shape ? "  shapes" : "");
  out << line;
  const Ceilings& c = options.ceilings;
  for (const SummaryRow& row : rows) {
    std::snprintf(line, sizeof line,
                  "%-32s %-8s %7lld %10.3f %5.1f%% %10.1f %8.2f %9.2f %7s %7s %-10s",
                  row.kernel.c_str(), row.backward ? "backward" : "forward",
                  static_cast<long long>(row.calls), 1e3 * row.seconds,
                  wall > 0 ? 100 * row.seconds / wall : 0.0,
                  1e6 * row.seconds / static_cast<double>(row.calls), 1e-9 * row.bytes_per_second(),
                  1e-9 * row.flops_per_second(),
                  share_of(row.bytes_per_second(), c.copy_bytes_per_second).c_str(),
                  share_of(row.flops_per_second(), c.gemm_flops_per_second).c_str(),
                  bound_by(row, c).c_str());
    out << line;
    if (options.by_shape) out << "  " << row.shapes;
    out << '\n';
  }
  const double kernels = total_seconds(all);
  if (rows.size() < all.size()) {
    const double shown = total_seconds(rows);
    std::snprintf(line, sizeof line, "%-32s %-8s %7s %10.3f %5.1f%%\n", "(the other kernels)", "",
                  "", 1e3 * (kernels - shown), wall > 0 ? 100 * (kernels - shown) / wall : 0.0);
    out << line;
  }
  const double outside = std::max(0.0, wall - kernels);
  std::snprintf(line, sizeof line, "%-32s %-8s %7s %10.3f %5.1f%%\n", "(outside the kernels)", "",
                "", 1e3 * outside, wall > 0 ? 100 * outside / wall : 0.0);
  out << line;
  std::snprintf(line, sizeof line, "%-32s %-8s %7zu %10.3f %5.1f%%\n", "(the profile)", "",
                profile.ops().size(), 1e3 * wall, 100.0);
  out << line;
  for (const MemoryPeak& peak : memory_peaks(profile))
    out << "peak memory on " << peak.device.str() << ": "
        << format("%.1f MiB", static_cast<double>(peak.bytes) / (1 << 20)) << " in live tensors"
        << (peak.kernel.empty() ? std::string() : ", for " + peak.kernel) << '\n';
  if (c.copy_bytes_per_second > 0 && c.gemm_flops_per_second > 0)
    out << "ceilings: copy " << format("%.2f", 1e-9 * c.copy_bytes_per_second)
        << " GB/s, float32 GEMM " << format("%.2f", 1e-9 * c.gemm_flops_per_second) << " GFLOP/s\n";
  return out.str();
}

std::string summary_csv(const Profile& profile, const SummaryOptions& options) {
  std::ostringstream out;
  out.precision(9);
  out << "kernel,family,pass,shapes,calls,seconds,share,bytes,flops,bytes_per_second,"
         "flops_per_second,copy_share,gemm_share,bound\n";
  const double wall = profile.seconds();
  const Ceilings& c = options.ceilings;
  for (const SummaryRow& row : summarize(profile, options)) {
    const auto ratio = [](double rate, double ceiling) {
      return rate > 0 && ceiling > 0 ? format("%.6f", rate / ceiling) : std::string();
    };
    out << csv_field(row.kernel) << ',' << row.family << ','
        << (row.backward ? "backward" : "forward") << ',' << csv_field(row.shapes) << ','
        << row.calls << ',' << row.seconds << ',' << (wall > 0 ? row.seconds / wall : 0) << ','
        << row.bytes << ',' << row.flops << ',' << row.bytes_per_second() << ','
        << row.flops_per_second() << ',' << ratio(row.bytes_per_second(), c.copy_bytes_per_second)
        << ',' << ratio(row.flops_per_second(), c.gemm_flops_per_second) << ',' << bound_by(row, c)
        << '\n';
  }
  return out.str();
}

}  // namespace normgrad::profiler
