#pragma once
// chrF (Popović, 2015) as sacreBLEU 2.x computes it by default ("chrF2"): character n-grams of
// orders 1..6 over the text with its whitespace removed, precision and recall per order
// averaged over the orders that occur on both sides, then combined with beta = 2, so recall
// weighs four times as much as precision:
//
//   chrF = 100 * (1 + beta^2) * P * R / (beta^2 * P + R)
//
// Word n-grams (chrF++, word_order = 2) are available too. Characters are Unicode code points,
// as in Python; a segment with several references takes the one with the best segment score.

#include "text/corpus_metric.h"

namespace normgrad::text {

struct ChrfOptions {
  int char_order = 6;
  int word_order = 0;  // 2 gives chrF++
  int beta = 2;
  bool lowercase = false;
};

class Chrf final : public CorpusMetric {
 public:
  explicit Chrf(ChrfOptions options = {});

  std::vector<MetricStatistics> segment_statistics(std::span<const std::string> hypotheses,
                                                   ReferenceStreams references) const override;
  MetricScore score(const MetricStatistics& summed) const override;
  std::string signature(std::size_t reference_count) const override;

  // The F-score of statistics laid out as [hyp, ref, match] per order (characters, then words).
  double f_score(const MetricStatistics& statistics) const;

  const ChrfOptions& options() const { return options_; }

 private:
  ChrfOptions options_;
};

}  // namespace normgrad::text
