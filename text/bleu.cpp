#include "text/bleu.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <unordered_map>

#include "base/error.h"
#include "text/unicode_text.h"

namespace normgrad::text {
namespace {

// Layout of a segment's statistics.
constexpr std::size_t hyp_len_at = 0;
constexpr std::size_t ref_len_at = 1;
constexpr std::size_t correct_at = 2;
constexpr std::size_t total_at = 2 + bleu_max_order;
constexpr std::size_t statistics_size = 2 + 2 * bleu_max_order;

// An n-gram is its words joined by single spaces: words never contain whitespace.
using NgramCounts = std::unordered_map<std::u32string, std::int64_t>;

NgramCounts count_ngrams(const std::vector<std::u32string_view>& words) {
  NgramCounts counts;
  counts.reserve(words.size() * bleu_max_order);
  for (int n = 1; n <= bleu_max_order; ++n) {
    for (std::size_t i = 0; i + n <= words.size(); ++i) {
      std::u32string ngram(words[i]);
      for (std::size_t k = 1; k < static_cast<std::size_t>(n); ++k) {
        ngram.push_back(U' ');
        ngram.append(words[i + k]);
      }
      ++counts[ngram];
    }
  }
  return counts;
}

std::size_t ngram_order(const std::u32string& ngram) {
  std::size_t order = 1;
  for (char32_t c : ngram) order += (c == U' ');
  return order;
}

// The reference length closest to the hypothesis's; of two equally close, the shorter.
std::int64_t closest_reference_length(std::int64_t hyp_len, const std::vector<std::int64_t>& lens) {
  std::int64_t best = -1;
  std::int64_t best_diff = -1;
  for (std::int64_t len : lens) {
    const std::int64_t diff = std::llabs(hyp_len - len);
    if (best_diff < 0 || diff < best_diff || (diff == best_diff && len < best)) {
      best = len;
      best_diff = diff;
    }
  }
  return best;
}

// sacreBLEU's my_log: log, with log(0) floored to -9999999999 so that exp() of the mean gives 0.
double floored_log(double x) { return x == 0.0 ? -9999999999.0 : std::log(x); }

}  // namespace

std::vector<MetricStatistics> Bleu::segment_statistics(std::span<const std::string> hypotheses,
                                                       ReferenceStreams references) const {
  check_reference_streams("BLEU", hypotheses.size(), references);
  auto words_of = [this](const std::string& line, std::size_t index, const char* role,
                         std::u32string& storage) {
    const std::string where = detail::concat(role, " line ", index + 1);
    storage = decode_utf8(line, where);
    if (options_.lowercase) storage = python_lower(storage);
    storage = tokenize(options_.tokenizer, python_rstrip(storage));
    return python_split(storage);
  };

  std::vector<MetricStatistics> out(hypotheses.size(), MetricStatistics(statistics_size, 0));
  std::u32string hyp_text;
  std::vector<std::u32string> ref_texts(references.size());
  for (std::size_t i = 0; i < hypotheses.size(); ++i) {
    // The reference side: per n-gram the largest count over references (clipping), and lengths.
    NgramCounts ref_counts;
    std::vector<std::int64_t> ref_lens;
    for (std::size_t r = 0; r < references.size(); ++r) {
      const auto words = words_of(references[r][i], i, "reference", ref_texts[r]);
      ref_lens.push_back(static_cast<std::int64_t>(words.size()));
      for (auto& [ngram, count] : count_ngrams(words)) {
        auto& kept = ref_counts[ngram];
        kept = std::max(kept, count);
      }
    }
    const auto hyp_words = words_of(hypotheses[i], i, "hypothesis", hyp_text);
    const auto hyp_len = static_cast<std::int64_t>(hyp_words.size());

    MetricStatistics& stats = out[i];
    stats[hyp_len_at] = hyp_len;
    stats[ref_len_at] = closest_reference_length(hyp_len, ref_lens);
    for (const auto& [ngram, count] : count_ngrams(hyp_words)) {
      const std::size_t n = ngram_order(ngram) - 1;
      stats[total_at + n] += count;
      const auto found = ref_counts.find(ngram);
      if (found != ref_counts.end()) stats[correct_at + n] += std::min(count, found->second);
    }
  }
  return out;
}

BleuScore Bleu::compute(const MetricStatistics& summed) const {
  MetricStatistics stats = summed.empty() ? MetricStatistics(statistics_size, 0) : summed;
  if (stats.size() != statistics_size) {
    throw Error(
        detail::concat("BLEU: expected ", statistics_size, " statistics, got ", stats.size()));
  }
  BleuScore result;
  result.hypothesis_length = stats[hyp_len_at];
  result.reference_length = stats[ref_len_at];
  const auto sys_len = static_cast<double>(stats[hyp_len_at]);
  const auto ref_len = static_cast<double>(stats[ref_len_at]);
  result.length_ratio = stats[ref_len_at] != 0 ? sys_len / ref_len : 0.0;
  result.brevity_penalty = 1.0;
  if (sys_len < ref_len)
    result.brevity_penalty = sys_len > 0 ? std::exp(1.0 - ref_len / sys_len) : 0.0;

  bool any_correct = false;
  for (int n = 0; n < bleu_max_order; ++n) any_correct |= stats[correct_at + n] != 0;
  if (!any_correct) return result;  // score 0, precisions 0

  // Exponential smoothing: the k-th order with no match gets precision 100 / (2^k * total).
  double smooth = 1.0;
  for (int n = 0; n < bleu_max_order; ++n) {
    const auto correct = static_cast<double>(stats[correct_at + n]);
    const auto total = static_cast<double>(stats[total_at + n]);
    if (total == 0) break;  // the remaining precisions stay 0, and so does the score
    if (correct == 0) {
      smooth *= 2;
      result.precisions[n] = 100.0 / (smooth * total);
    } else {
      result.precisions[n] = 100.0 * correct / total;
    }
  }
  double log_sum = 0.0;
  for (double p : result.precisions) log_sum += floored_log(p);
  result.score = result.brevity_penalty * std::exp(log_sum / bleu_max_order);
  return result;
}

MetricScore Bleu::score(const MetricStatistics& summed) const {
  const BleuScore bleu = compute(summed);
  char details[256];
  std::snprintf(details, sizeof details,
                "%.1f/%.1f/%.1f/%.1f (BP = %.3f ratio = %.3f hyp_len = %lld ref_len = %lld)",
                bleu.precisions[0], bleu.precisions[1], bleu.precisions[2], bleu.precisions[3],
                bleu.brevity_penalty, bleu.length_ratio,
                static_cast<long long>(bleu.hypothesis_length),
                static_cast<long long>(bleu.reference_length));
  return MetricScore{"BLEU", bleu.score, details};
}

std::string Bleu::signature(std::size_t reference_count) const {
  return detail::concat("nrefs:", reference_count, "|case:", options_.lowercase ? "lc" : "mixed",
                        "|eff:no|tok:", bleu_tokenizer_name(options_.tokenizer),
                        "|smooth:exp|version:", sacrebleu_version);
}

}  // namespace normgrad::text
