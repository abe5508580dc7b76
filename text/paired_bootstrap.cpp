#include "text/paired_bootstrap.h"

#include <algorithm>
#include <cmath>
#include <random>

#include "base/error.h"

namespace normgrad::text {
namespace {

// A uniform index in [0, n). Spelled out rather than left to std::uniform_int_distribution,
// whose draws differ between standard libraries, so that a seed gives the same resamples
// everywhere. The modulo's bias is below n / 2^64: nothing next to a bootstrap's own noise.
std::size_t draw_index(std::mt19937_64& engine, std::size_t n) {
  return static_cast<std::size_t>(engine() % n);
}

// The mean and the half-width of the 95% interval, read from the sorted scores as sacreBLEU
// does: the values 1/40 from either end.
BootstrapEstimate estimate(double score, std::vector<double> scores) {
  std::sort(scores.begin(), scores.end());
  const std::size_t n = scores.size();
  const std::size_t lower = n / 40;
  const std::size_t upper = n - lower - 1;
  double sum = 0.0;
  for (double s : scores) sum += s;
  return BootstrapEstimate{score, sum / static_cast<double>(n),
                           0.5 * (scores[upper] - scores[lower])};
}

}  // namespace

PairedBootstrapResult paired_bootstrap(const CorpusMetric& metric,
                                       std::span<const MetricStatistics> baseline,
                                       std::span<const MetricStatistics> system, int samples,
                                       std::uint64_t seed) {
  if (baseline.size() != system.size()) {
    throw Error(detail::concat("paired_bootstrap: the baseline has ", baseline.size(),
                               " segments and the system ", system.size()));
  }
  if (baseline.empty()) throw Error("paired_bootstrap: no segments to resample");
  if (samples < 1)
    throw Error(detail::concat("paired_bootstrap: samples must be >= 1, got ", samples));

  const double baseline_score = metric.score(sum_statistics(baseline)).score;
  const double system_score = metric.score(sum_statistics(system)).score;

  std::mt19937_64 engine(seed);
  const std::size_t n = baseline.size();
  const std::size_t width = baseline.front().size();
  std::vector<double> baseline_scores(samples);
  std::vector<double> system_scores(samples);
  MetricStatistics baseline_sum(width);
  MetricStatistics system_sum(width);
  for (int s = 0; s < samples; ++s) {
    std::fill(baseline_sum.begin(), baseline_sum.end(), 0);
    std::fill(system_sum.begin(), system_sum.end(), 0);
    for (std::size_t k = 0; k < n; ++k) {
      const std::size_t i = draw_index(engine, n);
      for (std::size_t j = 0; j < width; ++j) {
        baseline_sum[j] += baseline[i][j];
        system_sum[j] += system[i][j];
      }
    }
    baseline_scores[s] = metric.score(baseline_sum).score;
    system_scores[s] = metric.score(system_sum).score;
  }

  // The null hypothesis centred: how often does a resample's difference, minus the mean
  // resampled difference, exceed the observed one?
  std::vector<double> differences(samples);
  double mean_difference = 0.0;
  for (int s = 0; s < samples; ++s) {
    differences[s] = std::abs(system_scores[s] - baseline_scores[s]);
    mean_difference += differences[s];
  }
  mean_difference /= samples;
  const double observed = std::abs(baseline_score - system_score);
  int exceed = 0;
  for (double d : differences) exceed += (d - mean_difference > observed);

  PairedBootstrapResult result;
  result.baseline = estimate(baseline_score, baseline_scores);
  result.system = estimate(system_score, system_scores);
  result.p_value = static_cast<double>(exceed + 1) / (samples + 1);
  result.samples = samples;
  result.seed = seed;
  return result;
}

}  // namespace normgrad::text
