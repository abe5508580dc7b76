#pragma once
// Sentences as a translation model takes them, outside training's TranslationBatches: the
// sources of translate (stdin), the pairs of score, and translating many sentences in
// batches sorted by length with any model that decodes a batch.

#include <normgrad/normgrad.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "decoding/beam_search.h"
#include "text/subword_tokenizer.h"

namespace nmt {

// Source sentences as an encoder takes them: ids + eos, padded with pad_id, their lengths (eos
// included) and the padding mask (1 at padding).
struct SourceBatch {
  normgrad::Tensor ids, lengths, padding;
};
SourceBatch make_source_batch(const std::vector<std::vector<std::int32_t>>& sentences,
                              normgrad::Device device);

// Target sentences for teacher forcing: input bos + y, output y + eos, padded with pad_id, and
// the padding mask of both (1 at padding). `output_ids` keeps the host copy of output.
struct TargetBatch {
  normgrad::Tensor input, output, padding;
  std::vector<std::int64_t> output_ids;  // [rows * width], row-major
  std::int64_t width = 0;                // the longest sentence + 1
};
TargetBatch make_target_batch(const std::vector<std::vector<std::int32_t>>& sentences,
                              normgrad::Device device);

// One model's beam search over a batch of sources: each sentence's n-best list.
using BatchTranslator = std::function<std::vector<std::vector<normgrad::decoding::Hypothesis>>(
    const SourceBatch& source)>;

struct Translation {
  std::string text;
  double score = 0;  // the search's penalised score
};

// Translates many sentences (subword ids, without eos; an empty one gives one empty
// translation): in batches of up to `batch_sentences`, sorted by length so that a batch is
// little padding, returned in the given order, each sentence's n-best list decoded by the
// tokenizer, best first.
std::vector<std::vector<Translation>> translate_n_best(
    const BatchTranslator& translator, const normgrad::text::SubwordTokenizer& tokenizer,
    const std::vector<std::vector<std::int32_t>>& sentences, std::int64_t batch_sentences,
    normgrad::Device device);

// The best translation of each sentence.
std::vector<std::string> best_translations(std::vector<std::vector<Translation>> n_best);

// Each pair's log-probability under a model: log P(y | x) summed over the target's subword
// tokens and eos.
struct PairScore {
  double log_probability = 0;
  std::int64_t tokens = 0;  // target subword tokens, eos included
};

// A model's log-probabilities [rows, width, V] of a batch of pairs under teacher forcing.
using TeacherForcedLogProbs =
    std::function<normgrad::Tensor(const SourceBatch& source, const TargetBatch& target)>;

// Scores sources[i] -> targets[i] (text, encoded by the tokenizer) in batches; an empty side
// gives log-probability 0 over 0 tokens. `program` names the caller in errors.
std::vector<PairScore> score_pairs(const TeacherForcedLogProbs& model,
                                   const normgrad::text::SubwordTokenizer& tokenizer,
                                   const std::vector<std::string>& sources,
                                   const std::vector<std::string>& targets,
                                   std::int64_t batch_sentences, normgrad::Device device,
                                   const std::string& program);

}  // namespace nmt
