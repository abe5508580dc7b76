#pragma once
// Corpus BLEU (Papineni et al., 2002) exactly as sacreBLEU 2.x computes it by default: the 13a
// tokenizer, case-sensitive, exponential smoothing of zero n-gram matches (NIST's, "exp"),
// the brevity penalty against the closest reference length, and no effective order.
//
//   BLEU = BP * exp( (1/4) * sum_{n=1..4} log p_n ),   p_n = clipped n-gram matches / n-grams
//   BP   = 1 if c >= r, else exp(1 - r/c)            (c: hypothesis words, r: reference words)
//
// docs/bleu.md works an example through by hand.

#include <array>

#include "text/bleu_tokenizer.h"
#include "text/corpus_metric.h"

namespace normgrad::text {

struct BleuOptions {
  bool lowercase = false;  // sacreBLEU's --lowercase: Python's str.lower() before tokenising
  BleuTokenizer tokenizer = BleuTokenizer::v13a;
};

inline constexpr int bleu_max_order = 4;

// The parts of a BLEU score; statistics as laid out by Bleu: hyp_len, ref_len, correct[1..4],
// total[1..4].
struct BleuScore {
  double score = 0.0;
  std::array<double, bleu_max_order> precisions{};  // percentages, smoothed
  double brevity_penalty = 0.0;
  double length_ratio = 0.0;  // hyp_len / ref_len
  std::int64_t hypothesis_length = 0;
  std::int64_t reference_length = 0;
};

class Bleu final : public CorpusMetric {
 public:
  explicit Bleu(BleuOptions options = {}) : options_(options) {}

  std::vector<MetricStatistics> segment_statistics(std::span<const std::string> hypotheses,
                                                   ReferenceStreams references) const override;
  MetricScore score(const MetricStatistics& summed) const override;
  std::string signature(std::size_t reference_count) const override;

  BleuScore compute(const MetricStatistics& summed) const;

  const BleuOptions& options() const { return options_; }

 private:
  BleuOptions options_;
};

}  // namespace normgrad::text
