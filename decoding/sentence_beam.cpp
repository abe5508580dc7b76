#include "decoding/sentence_beam.h"

#include <algorithm>
#include <cmath>

#include "base/error.h"

namespace normgrad::decoding {

bool ranks_before(const Extension& a, const Extension& b) {
  if (a.log_prob != b.log_prob) return a.log_prob > b.log_prob;
  if (a.parent != b.parent) return a.parent < b.parent;
  if (a.token_log_prob != b.token_log_prob) return a.token_log_prob > b.token_log_prob;
  return a.token < b.token;
}

SentenceBeam::SentenceBeam(const BeamSearchOptions& options, std::int64_t max_length)
    : beam_size_(options.beam_size),
      eos_(options.eos),
      max_length_(max_length),
      penalty_(options.length_penalty),
      alpha_(options.alpha),
      live_{Live{{}, 0.0}} {}  // the empty prefix, before bos is fed

std::int64_t SentenceBeam::last_token(std::int64_t rank, std::int64_t bos) const {
  const std::vector<std::int64_t>& tokens = live_[rank].tokens;
  return tokens.empty() ? bos : tokens.back();
}

void SentenceBeam::finish(const Extension& extension, std::int64_t step) {
  Hypothesis hypothesis;
  hypothesis.tokens = live_[extension.parent].tokens;
  hypothesis.ended_with_eos = extension.token == eos_;
  if (!hypothesis.ended_with_eos) hypothesis.tokens.push_back(extension.token);
  hypothesis.log_prob = extension.log_prob;
  // |Y| = step: one log-probability per step, eos's included.
  hypothesis.score = penalised_score(extension.log_prob, step, penalty_, alpha_);
  finished_.push_back(std::move(hypothesis));
}

const std::vector<std::int64_t>& SentenceBeam::advance(std::vector<Extension>& extensions,
                                                       std::int64_t step) {
  parents_.clear();
  next_live_.clear();
  // NaN would break the sort's ordering; log-probabilities that are valid never produce one
  // (-inf + -inf is -inf), only a +inf from the decoder after a -inf prefix.
  for (const Extension& extension : extensions)
    NG_CHECK(!std::isnan(extension.log_prob), "beam_search", "step ", step,
             " gave a total log-probability of NaN (token ", extension.token,
             " has log-probability ", extension.token_log_prob, "; log-probabilities are <= 0)");
  std::sort(extensions.begin(), extensions.end(), ranks_before);
  const auto full = [&] { return static_cast<std::int64_t>(finished_.size()) >= beam_size_; };

  if (step >= max_length_) {
    // Cut off: the best extensions finish as they are, eos or not, until k have finished.
    for (const Extension& extension : extensions) {
      if (full()) break;
      finish(extension, step);
    }
    live_.clear();
    done_ = true;
    return parents_;
  }
  // eos among the k best extensions finishes a hypothesis ...
  const std::size_t first_k = std::min(extensions.size(), static_cast<std::size_t>(beam_size_));
  for (std::size_t i = 0; i < first_k && !full(); ++i)
    if (extensions[i].token == eos_) finish(extensions[i], step);
  // ... and the k best that are not eos stay live, so the beam stays k wide.
  for (const Extension& extension : extensions) {
    if (static_cast<std::int64_t>(next_live_.size()) == beam_size_) break;
    if (extension.token == eos_) continue;
    Live next{live_[extension.parent].tokens, extension.log_prob};
    next.tokens.push_back(extension.token);
    next_live_.push_back(std::move(next));
    parents_.push_back(extension.parent);
  }
  live_.swap(next_live_);
  done_ = full() || live_.empty();
  if (done_) {
    live_.clear();
    parents_.clear();
  }
  return parents_;
}

std::vector<Hypothesis> SentenceBeam::n_best(std::int64_t n) const {
  std::vector<Hypothesis> sorted = finished_;
  std::stable_sort(sorted.begin(), sorted.end(),
                   [](const Hypothesis& a, const Hypothesis& b) { return a.score > b.score; });
  if (static_cast<std::int64_t>(sorted.size()) > n) sorted.resize(static_cast<std::size_t>(n));
  return sorted;
}

}  // namespace normgrad::decoding
