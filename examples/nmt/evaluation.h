#pragma once
// BLEU of a model's translations of a held-out set against the untouched reference text,
// whatever the model: it comes in as a function from source sentences to translations.

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "text/parallel_dataset.h"
#include "data/shards.h"

namespace nmt {

struct BleuEvaluation {
  double bleu = 0;
  std::string text;                       // sacreBLEU's line
  std::vector<std::string> translations;  // one per pair of the dataset, in its order
};

// Source sentences (subword ids without eos) to one translation each.
using SentenceTranslator = std::function<std::vector<std::string>(
    const std::vector<std::vector<std::int32_t>>& sentences)>;

// Translates the dataset's sources and scores them with BLEU against `references`, the
// reference file's lines (dataset.line(i) picks each pair's); an Error naming `program` when
// the references are shorter than the dataset's lines. In data-parallel training (`shard` of
// several) each rank translates every count-th sentence from its index, and the ranks gather
// all translations: every rank returns the same, the whole dataset's score.
BleuEvaluation dataset_bleu(const SentenceTranslator& translate,
                            const normgrad::text::ParallelDataset& dataset,
                            const std::vector<std::string>& references, const std::string& program,
                            const normgrad::data::Shard& shard = {});

// The shard of a held-out set's batches in data-parallel evaluation: every batch dealt, the
// shares unequal where they do not divide.
inline normgrad::data::Shard evaluation_share(normgrad::data::Shard shard) {
  shard.equal = false;
  return shard;
}

// A held-out set's loss per token from a summed loss and its token count: in data-parallel
// evaluation (`shard` of several), each rank's sums added over the ranks first.
double loss_per_token(double total, std::int64_t tokens, const normgrad::data::Shard& shard);

}  // namespace nmt
