#include "text/chrf.h"

#include <unordered_map>

#include "base/error.h"
#include "text/unicode_text.h"

namespace normgrad::text {
namespace {

using NgramCounts = std::unordered_map<std::u32string, std::int64_t>;

// Character n-grams of orders 1..max_order of the text with all whitespace removed.
std::vector<NgramCounts> character_ngrams(std::u32string_view text, int max_order) {
  std::u32string squeezed;
  for (std::u32string_view word : python_split(text)) squeezed.append(word);
  std::vector<NgramCounts> counts(max_order);
  for (int n = 1; n <= max_order; ++n) {
    for (std::size_t i = 0; i + n <= squeezed.size(); ++i) ++counts[n - 1][squeezed.substr(i, n)];
  }
  return counts;
}

bool is_ascii_punctuation(char32_t c) {
  return (c >= U'!' && c <= U'/') || (c >= U':' && c <= U'@') || (c >= U'[' && c <= U'`') ||
         (c >= U'{' && c <= U'~');
}

// chrF++'s words: split at whitespace, and one punctuation mark split off the end of a word,
// or else off its start.
std::vector<std::u32string> words_with_punctuation_split(std::u32string_view text) {
  std::vector<std::u32string> words;
  for (std::u32string_view w : python_split(text)) {
    if (w.size() > 1 && is_ascii_punctuation(w.back())) {
      words.emplace_back(w.substr(0, w.size() - 1));
      words.emplace_back(w.substr(w.size() - 1));
    } else if (w.size() > 1 && is_ascii_punctuation(w.front())) {
      words.emplace_back(w.substr(0, 1));
      words.emplace_back(w.substr(1));
    } else {
      words.emplace_back(w);
    }
  }
  return words;
}

NgramCounts word_ngrams(const std::vector<std::u32string>& words, int n) {
  NgramCounts counts;
  for (std::size_t i = 0; i + n <= words.size(); ++i) {
    std::u32string ngram = words[i];
    for (int k = 1; k < n; ++k) ngram.append(U" ").append(words[i + k]);
    ++counts[ngram];
  }
  return counts;
}

std::vector<NgramCounts> all_ngrams(std::u32string_view text, const ChrfOptions& options) {
  auto counts = character_ngrams(text, options.char_order);
  if (options.word_order > 0) {
    const auto words = words_with_punctuation_split(text);
    for (int n = 1; n <= options.word_order; ++n) counts.push_back(word_ngrams(words, n));
  }
  return counts;
}

std::int64_t total_count(const NgramCounts& counts) {
  std::int64_t total = 0;
  for (const auto& entry : counts) total += entry.second;
  return total;
}

}  // namespace

Chrf::Chrf(ChrfOptions options) : options_(options) {
  if (options.char_order < 1 || options.word_order < 0 || options.beta < 1) {
    throw Error(detail::concat("chrF: char_order must be >= 1, word_order >= 0 and beta >= 1; got ",
                               options.char_order, ", ", options.word_order, " and ",
                               options.beta));
  }
}

std::vector<MetricStatistics> Chrf::segment_statistics(std::span<const std::string> hypotheses,
                                                       ReferenceStreams references) const {
  check_reference_streams("chrF", hypotheses.size(), references);
  auto ngrams_of = [this](const std::string& line, std::size_t index, const char* role) {
    std::u32string text = decode_utf8(line, detail::concat(role, " line ", index + 1));
    if (options_.lowercase) text = python_lower(text);
    return all_ngrams(text, options_);
  };

  std::vector<MetricStatistics> out(hypotheses.size());
  for (std::size_t i = 0; i < hypotheses.size(); ++i) {
    const auto hyp = ngrams_of(hypotheses[i], i, "hypothesis");
    double best_f = -1.0;
    for (std::size_t r = 0; r < references.size(); ++r) {
      const auto ref = ngrams_of(references[r][i], i, "reference");
      MetricStatistics stats;
      for (std::size_t order = 0; order < hyp.size(); ++order) {
        std::int64_t match = 0;
        for (const auto& [ngram, count] : hyp[order]) {
          const auto found = ref[order].find(ngram);
          if (found != ref[order].end()) match += std::min(count, found->second);
        }
        // A reference without n-grams of this order counts no hypothesis n-grams either.
        stats.push_back(ref[order].empty() ? 0 : total_count(hyp[order]));
        stats.push_back(total_count(ref[order]));
        stats.push_back(match);
      }
      const double f = f_score(stats);
      if (f > best_f) {
        best_f = f;
        out[i] = std::move(stats);
      }
    }
  }
  return out;
}

double Chrf::f_score(const MetricStatistics& statistics) const {
  const auto orders = static_cast<std::size_t>(options_.char_order + options_.word_order);
  if (statistics.size() != 3 * orders) {
    throw Error(
        detail::concat("chrF: expected ", 3 * orders, " statistics, got ", statistics.size()));
  }
  const double factor = static_cast<double>(options_.beta) * options_.beta;
  double precision_sum = 0.0;
  double recall_sum = 0.0;
  int effective_order = 0;
  for (std::size_t i = 0; i < orders; ++i) {
    const std::int64_t n_hyp = statistics[3 * i];
    const std::int64_t n_ref = statistics[3 * i + 1];
    const auto n_match = static_cast<double>(statistics[3 * i + 2]);
    if (n_hyp > 0 && n_ref > 0) {
      precision_sum += n_match / static_cast<double>(n_hyp);
      recall_sum += n_match / static_cast<double>(n_ref);
      ++effective_order;
    }
  }
  if (effective_order == 0) return 0.0;
  const double precision = precision_sum / effective_order;
  const double recall = recall_sum / effective_order;
  if (precision + recall == 0.0) return 0.0;
  double score = (1 + factor) * precision * recall;
  score /= factor * precision + recall;
  return 100 * score;
}

MetricScore Chrf::score(const MetricStatistics& summed) const {
  const auto orders = static_cast<std::size_t>(options_.char_order + options_.word_order);
  const MetricStatistics stats = summed.empty() ? MetricStatistics(3 * orders, 0) : summed;
  std::string name = detail::concat("chrF", options_.beta);
  name.append(static_cast<std::size_t>(options_.word_order), '+');
  return MetricScore{name, f_score(stats), ""};
}

std::string Chrf::signature(std::size_t reference_count) const {
  return detail::concat("nrefs:", reference_count, "|case:", options_.lowercase ? "lc" : "mixed",
                        "|eff:yes|nc:", options_.char_order, "|nw:", options_.word_order,
                        "|space:no|version:", sacrebleu_version);
}

}  // namespace normgrad::text
