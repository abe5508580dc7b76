#pragma once
// Timing for the plain benchmark programs that run on either device (bench_norms_cuda,
// bench_recurrent_step): batches of calls that last a set time between two waits for the device,
// their median time per call, and the spread over the batches.

#include <normgrad/normgrad.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <utility>
#include <vector>

namespace normgrad::bench {

struct Settings {
  Device device;
  int repetitions;  // timed batches
  double min_time;  // seconds per batch
};

inline void wait_for(Device device) {
  if (device.is_cuda()) cuda::synchronize(device.index);
}

// Seconds per call over `calls` calls of `step`, the device's queue drained at both ends.
inline double seconds_per_call(const std::function<void()>& step, int calls, Device device) {
  wait_for(device);
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < calls; ++i) step();
  wait_for(device);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return seconds / calls;
}

// Calls of `step` that take about settings.min_time, after three warm-up calls (the
// allocator's cache, the first launches).
inline int calls_per_batch(const std::function<void()>& step, const Settings& settings) {
  for (int i = 0; i < 3; ++i) step();
  int calls = 1;
  while (calls * seconds_per_call(step, calls, settings.device) < settings.min_time / 4 &&
         calls < (1 << 20))
    calls *= 2;
  const double per_call = seconds_per_call(step, calls, settings.device);
  return std::max(1, static_cast<int>(settings.min_time / std::max(per_call, 1e-12)));
}

inline double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  if (n == 0) return 0;
  return n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

// Standard deviation over mean.
inline double coefficient_of_variation(const std::vector<double>& values) {
  const double n = static_cast<double>(values.size());
  double mean = 0, square = 0;
  for (double v : values) mean += v / n;
  for (double v : values) square += (v - mean) * (v - mean) / n;
  return mean > 0 ? std::sqrt(square) / mean : 0.0;
}

// Median seconds per call of `step` over settings.repetitions batches, and their coefficient
// of variation.
inline std::pair<double, double> time_per_call(const std::function<void()>& step,
                                               const Settings& settings) {
  const int calls = calls_per_batch(step, settings);
  std::vector<double> per_call;
  for (int r = 0; r < settings.repetitions; ++r)
    per_call.push_back(seconds_per_call(step, calls, settings.device));
  return {median(per_call), coefficient_of_variation(per_call)};
}

}  // namespace normgrad::bench
