#pragma once
// What BLEU and chrF share: both are corpus metrics computed from sufficient statistics,
// integer counts per segment that add up over a corpus. A score is a function of the summed
// counts, never an average of segment scores, which is also what makes bootstrap resampling
// cheap: a resampled corpus is a resampled sum.

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace normgrad::text {

// One segment's counts, or a corpus's sum of them; the layout is the metric's own.
using MetricStatistics = std::vector<std::int64_t>;

// references[r][i] is reference r of segment i: sacreBLEU's layout, one stream per reference.
using ReferenceStreams = std::span<const std::vector<std::string>>;

struct MetricScore {
  std::string name;     // "BLEU", "chrF2"
  double score = 0.0;   // 0..100
  std::string details;  // what follows the score in sacreBLEU's text form, or ""

  // sacreBLEU's text form: "BLEU = 22.28 100.0/50.8/29.3/19.2 (BP = ...)", the score to
  // `decimals` places, with "|signature" after the name where one is given.
  std::string format(int decimals = 2, const std::string& signature = "") const;
};

class CorpusMetric {
 public:
  virtual ~CorpusMetric() = default;

  // The counts of each segment of `hypotheses` against its references. Lines are UTF-8 (an
  // Error names the segment otherwise), and every stream must have one line per hypothesis.
  virtual std::vector<MetricStatistics> segment_statistics(std::span<const std::string> hypotheses,
                                                           ReferenceStreams references) const = 0;

  // The score of counts summed over segments.
  virtual MetricScore score(const MetricStatistics& summed) const = 0;

  // sacreBLEU's signature, e.g. "nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:2.6.0".
  virtual std::string signature(std::size_t reference_count) const = 0;

  MetricScore corpus_score(std::span<const std::string> hypotheses,
                           ReferenceStreams references) const;
};

MetricStatistics sum_statistics(std::span<const MetricStatistics> segments);

// Checks that there is at least one reference stream and that each has as many lines as there
// are hypotheses; `metric` names the caller in the Error.
void check_reference_streams(const char* metric, std::size_t hypothesis_count,
                             ReferenceStreams references);

// The sacreBLEU release whose output the fixtures of tests/ were generated with and which the
// signatures name: the scores agree with it to every printed digit.
inline constexpr const char* sacrebleu_version = "2.6.0";

}  // namespace normgrad::text
