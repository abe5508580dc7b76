#pragma once
// Paired bootstrap resampling (Koehn, 2004), as sacreBLEU's --paired-bs: is system B's score
// really different from baseline A's on this test set, or could the difference come from which
// sentences happen to be in it?
//
// Each of `samples` resamples draws as many segments as the test set has, with replacement,
// and scores both systems on the same draw (summing their segment statistics). From the
// resampled scores come each system's mean and 95% interval (half the distance between the
// 2.5th and 97.5th percentiles), and the p-value of the observed difference d = |B - A|:
//
//   p = (1 + #{ resamples with |B_s - A_s| - mean_s |B_s - A_s| > d }) / (samples + 1)
//
// sacreBLEU draws its resamples with NumPy's generator; this one draws them from a seeded
// Mersenne Twister, so means, intervals and p-values agree with sacreBLEU's in distribution,
// not to the digit.

#include <cstdint>
#include <span>

#include "text/corpus_metric.h"

namespace normgrad::text {

struct BootstrapEstimate {
  double score = 0.0;     // on the whole test set
  double mean = 0.0;      // over the resamples
  double interval = 0.0;  // the 95% interval is mean ± interval
};

struct PairedBootstrapResult {
  BootstrapEstimate baseline;
  BootstrapEstimate system;
  double p_value = 1.0;
  int samples = 0;
  std::uint64_t seed = 0;
};

inline constexpr int default_bootstrap_samples = 1000;
inline constexpr std::uint64_t default_bootstrap_seed = 12345;  // sacreBLEU's default seed

// baseline and system hold the segment statistics of the two systems on the same segments.
PairedBootstrapResult paired_bootstrap(const CorpusMetric& metric,
                                       std::span<const MetricStatistics> baseline,
                                       std::span<const MetricStatistics> system,
                                       int samples = default_bootstrap_samples,
                                       std::uint64_t seed = default_bootstrap_seed);

}  // namespace normgrad::text
