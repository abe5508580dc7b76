#pragma once
// gru_nmt score: the model's log-probability of given translations, log P(y | x) summed over
// the target's subword tokens and eos.

#include <normgrad/normgrad.h>

#include <string>
#include <vector>

#include "text/subword_tokenizer.h"
#include "model.h"
#include "nmt/sentence_batches.h"

namespace gru_nmt {

using nmt::PairScore;

// Scores sources[i] -> targets[i]; an empty side gives log-probability 0 over 0 tokens.
std::vector<PairScore> score_pairs(RnnSearch& model,
                                   const normgrad::text::SubwordTokenizer& tokenizer,
                                   const std::vector<std::string>& sources,
                                   const std::vector<std::string>& targets,
                                   std::int64_t batch_sentences, normgrad::Device device);

}  // namespace gru_nmt
