#include "decoding/top_tokens.h"

#include <cmath>

namespace normgrad::decoding {
namespace {

template <typename T>
std::int64_t select_top(const T* row, std::int64_t vocab, std::int64_t count, TokenLogProb* best) {
  std::int64_t filled = 0;
  double worst = 0;  // best[count - 1].log_prob once `filled` reaches count
  for (std::int64_t token = 0; token < vocab; ++token) {
    const double value = row[token];
    // The common case: no better than the count-th best. A later token with an equal value
    // ranks after it (larger id), so it does not enter either. NaN fails the comparison and
    // goes on to the check below.
    if (filled == count && value <= worst) continue;
    if (std::isnan(value)) return token;
    // Insert after every kept entry that is at least as large (they have smaller ids).
    std::int64_t slot = filled < count ? filled++ : count - 1;
    while (slot > 0 && best[slot - 1].log_prob < value) {
      best[slot] = best[slot - 1];
      --slot;
    }
    best[slot] = {token, value};
    if (filled == count) worst = best[count - 1].log_prob;
  }
  return -1;
}

}  // namespace

std::int64_t top_tokens(const float* row, std::int64_t vocab, std::int64_t count,
                        TokenLogProb* best) {
  return select_top(row, vocab, count, best);
}

std::int64_t top_tokens(const double* row, std::int64_t vocab, std::int64_t count,
                        TokenLogProb* best) {
  return select_top(row, vocab, count, best);
}

}  // namespace normgrad::decoding
