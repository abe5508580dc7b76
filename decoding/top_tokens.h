#pragma once
// The few best tokens of one row of log-probabilities: what a beam needs from each row of a
// step's [rows, V] output. A sentence's k best extensions lie among the k best tokens of each
// of its rows, and its k best extensions other than eos among the k + 1 best of each row (a
// row has one eos), so k + 1 per row suffice, and a full sort of V is never needed.

#include <cstdint>

namespace normgrad::decoding {

struct TokenLogProb {
  std::int64_t token;
  double log_prob;
};

// Writes the `count` best entries of row[0, vocab) into best[0, count), best first: larger
// log-probability first, and among equal ones the smaller token id first (argmax's rule).
// count <= vocab. Returns the index of a NaN entry if the row holds one (its order would be
// undefined), else -1.
//
// One pass, in blocks of 16 entries: a block with nothing better than the current count-th
// best costs one vector comparison per entry and no branch, so a row costs about V
// comparisons, against V log V for a sort and about 2V for nth_element, and runs at memory
// speed rather than a branch per entry.
std::int64_t top_tokens(const float* row, std::int64_t vocab, std::int64_t count,
                        TokenLogProb* best);
std::int64_t top_tokens(const double* row, std::int64_t vocab, std::int64_t count,
                        TokenLogProb* best);

}  // namespace normgrad::decoding
