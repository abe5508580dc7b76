#pragma once
// Length normalisation of a finished hypothesis's score. Log-probabilities are negative and
// add up with every token, so an unnormalised search prefers short outputs; dividing by a
// growing function of the length offsets that.
//
// |Y| is the number of tokens whose log-probabilities make up the score: the output tokens
// plus the eos token when the hypothesis ended with one (a hypothesis cut off at the maximum
// length has no eos, and |Y| is its number of tokens). bos is never counted: it is given, not
// predicted.
//
//   None      score = log P(Y)
//   Average   score = log P(Y) / |Y|                         (Nematus's --normalise)
//   Gnmt      score = log P(Y) / ((5 + |Y|) / 6)^alpha       (Wu et al. 2016, Section 7;
//                                                             Transformer toolkits, alpha 0.6)

#include <cstdint>
#include <string>

namespace normgrad::decoding {

enum class LengthPenalty { None, Average, Gnmt };

std::string to_string(LengthPenalty penalty);  // "none", "average", "gnmt"

// The score of a hypothesis of log-probability `log_prob` and length |Y| = `length` >= 1.
double penalised_score(double log_prob, std::int64_t length, LengthPenalty penalty, double alpha);

}  // namespace normgrad::decoding
