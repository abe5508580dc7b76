#include "io/ceilings.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include "autograd/ops.h"
#include "core/cuda.h"
#include "core/threads.h"
#include "io/atomic_file.h"

namespace normgrad::io {

namespace {

// The best time of `repeats` runs of `work`, each waited for on a GPU.
double best_seconds(Device device, int repeats, const std::function<void()>& work) {
  double best = 1e300;
  for (int r = 0; r < repeats; ++r) {
    if (device.is_cuda()) cuda::synchronize(device.index);
    const auto start = std::chrono::steady_clock::now();
    work();
    if (device.is_cuda()) cuda::synchronize(device.index);
    best = std::min(
        best, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  return best;
}

std::string today() {
  const std::time_t now = std::time(nullptr);
  char text[16];
  std::strftime(text, sizeof text, "%Y-%m-%d", std::gmtime(&now));
  return text;
}

}  // namespace

profiler::Ceilings measure_ceilings(Device device) {
  const std::int64_t copy_values = std::int64_t{64} << 20;  // 256 MiB of float32
  const Tensor source = ones({copy_values}, {.device = device});
  Tensor target = zeros({copy_values}, {.device = device});
  const double copy = best_seconds(device, 5, [&] { target.copy_(source); });

  const std::int64_t n = 2048;
  const Tensor a = ones({n, n}, {.device = device}), b = ones({n, n}, {.device = device});
  (void)matmul(a, b);  // the first call sets up what later ones reuse
  const double gemm = best_seconds(device, 3, [&] { (void)matmul(a, b); });
  return {.copy_bytes_per_second = 2.0 * 4.0 * static_cast<double>(copy_values) / copy,
          .gemm_flops_per_second = 2.0 * static_cast<double>(n * n * n) / gemm};
}

std::string processor_model() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line))
    if (line.rfind("model name", 0) == 0 && line.find(':') != std::string::npos)
      return line.substr(line.find(':') + 2);
  return "unknown processor";
}

std::string ceilings_file() {
  if (const char* file = std::getenv("NORMGRAD_CEILINGS"); file != nullptr && *file != '\0')
    return file;
  if (const char* cache = std::getenv("XDG_CACHE_HOME"); cache != nullptr && *cache != '\0')
    return std::string(cache) + "/normgrad/ceilings.tsv";
  const char* home = std::getenv("HOME");
  return std::string(home != nullptr ? home : ".") + "/.cache/normgrad/ceilings.tsv";
}

std::string machine_key(Device device) {
  return device.str() + " | " + processor_model() + " | " + std::to_string(get_num_threads()) +
         " threads";
}

MachineCeilings machine_ceilings(Device device, const std::string& file) {
  MachineCeilings out{.key = machine_key(device), .file = file};
  std::vector<std::string> lines;
  {
    std::ifstream in(file);
    std::string line;
    while (std::getline(in, line)) {
      if (line.empty()) continue;
      std::istringstream fields(line);
      std::string key, copy, gemm;
      if (std::getline(fields, key, '\t') && key == out.key && std::getline(fields, copy, '\t') &&
          std::getline(fields, gemm, '\t')) {
        try {
          out.ceilings = {.copy_bytes_per_second = std::stod(copy),
                          .gemm_flops_per_second = std::stod(gemm)};
          if (out.ceilings.copy_bytes_per_second > 0 && out.ceilings.gemm_flops_per_second > 0)
            return out;
        } catch (const std::exception&) {
        }
        continue;  // a damaged line for this machine is measured again and replaced
      }
      lines.push_back(line);
    }
  }
  out.ceilings = measure_ceilings(device);
  out.measured = true;
  std::ostringstream line;
  line.precision(6);
  line << out.key << '\t' << out.ceilings.copy_bytes_per_second << '\t'
       << out.ceilings.gemm_flops_per_second << '\t' << today();
  lines.push_back(line.str());
  try {
    const std::filesystem::path parent = std::filesystem::path(file).parent_path();
    if (!parent.empty()) std::filesystem::create_directories(parent);
    std::string text;
    for (const std::string& kept : lines) text += kept + '\n';
    write_atomically(file, "machine_ceilings",
                     [&](const FileWriter& writer) { writer.write(text.data(), text.size()); });
  } catch (const std::exception&) {
    // Kept for next time only where the file can be written; the figures stand regardless.
  }
  return out;
}

}  // namespace normgrad::io
