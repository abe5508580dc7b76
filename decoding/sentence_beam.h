#pragma once
// SentenceBeam: one sentence's share of a beam search — its live hypotheses (the rows it has
// in the decoder, in order) and the finished ones set aside — and the rule that advances it
// by one step. beam_search.cpp runs one per sentence of the batch; nothing here depends on the
// other sentences, which is why a sentence gets the same result in any batch.

#include <cstdint>
#include <vector>

#include "decoding/beam_search.h"

namespace normgrad::decoding {

// One way to extend a live hypothesis: its parent (rank among the live hypotheses) and token.
struct Extension {
  double log_prob;        // the parent's log-probability plus token_log_prob
  std::int64_t parent;    // rank of the extended hypothesis, 0 = first row of the sentence
  double token_log_prob;  // log P(token | parent)
  std::int64_t token;
};

// The order extensions are ranked in, best first: total log-probability, then parent rank,
// then the token's own log-probability, then token id. Within one parent this is the order
// top_tokens() uses (a larger token log-probability never gives a smaller total), so the
// k + 1 best tokens of each row hold every extension the rule below can pick.
bool ranks_before(const Extension& a, const Extension& b);

class SentenceBeam {
 public:
  SentenceBeam(const BeamSearchOptions& options, std::int64_t max_length);

  bool done() const { return done_; }
  std::int64_t max_length() const { return max_length_; }
  std::int64_t live_count() const { return static_cast<std::int64_t>(live_.size()); }
  double live_log_prob(std::int64_t rank) const { return live_[rank].log_prob; }
  // The token to feed live hypothesis `rank`: its last one, or bos before the first step.
  std::int64_t last_token(std::int64_t rank, std::int64_t bos) const;

  // Advances by decoding step `step` (1-based: the hypotheses grow to length `step`) given
  // its candidate extensions, in any order (they are sorted in place). Returns the parent
  // rank of each new live hypothesis, in their new order; empty once done().
  const std::vector<std::int64_t>& advance(std::vector<Extension>& extensions, std::int64_t step);

  // The n best finished hypotheses, best score first; equal scores in the order they finished.
  std::vector<Hypothesis> n_best(std::int64_t n) const;

 private:
  struct Live {
    std::vector<std::int64_t> tokens;
    double log_prob;
  };
  void finish(const Extension& extension, std::int64_t step);

  std::int64_t beam_size_, eos_, max_length_;
  LengthPenalty penalty_;
  double alpha_;
  std::vector<Live> live_, next_live_;
  std::vector<std::int64_t> parents_;
  std::vector<Hypothesis> finished_;
  bool done_ = false;
};

}  // namespace normgrad::decoding
