#include "text/corpus_metric.h"

#include <cstdio>

#include "base/error.h"

namespace normgrad::text {

std::string MetricScore::format(int decimals, const std::string& signature) const {
  char number[64];
  std::snprintf(number, sizeof number, "%.*f", decimals, score);
  std::string text = name;
  if (!signature.empty()) text += "|" + signature;
  text += " = ";
  text += number;
  if (!details.empty()) text += " " + details;
  return text;
}

MetricScore CorpusMetric::corpus_score(std::span<const std::string> hypotheses,
                                       ReferenceStreams references) const {
  const auto segments = segment_statistics(hypotheses, references);
  return score(sum_statistics(segments));
}

MetricStatistics sum_statistics(std::span<const MetricStatistics> segments) {
  MetricStatistics total;
  for (const auto& segment : segments) {
    if (total.empty()) total.assign(segment.size(), 0);
    if (segment.size() != total.size()) {
      throw Error(detail::concat("sum_statistics: segments have ", total.size(), " and ",
                                 segment.size(), " counts"));
    }
    for (std::size_t k = 0; k < total.size(); ++k) total[k] += segment[k];
  }
  return total;
}

void check_reference_streams(const char* metric, std::size_t hypothesis_count,
                             ReferenceStreams references) {
  if (references.empty()) throw Error(detail::concat(metric, ": no references given"));
  for (std::size_t r = 0; r < references.size(); ++r) {
    if (references[r].size() != hypothesis_count) {
      throw Error(detail::concat(metric, ": reference stream ", r + 1, " has ",
                                 references[r].size(), " lines but there are ", hypothesis_count,
                                 " hypotheses"));
    }
  }
}

}  // namespace normgrad::text
