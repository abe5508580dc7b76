#pragma once
// BLEU of a model's translations of a held-out set against the untouched reference text,
// whatever the model: it comes in as a function from source sentences to translations.

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "data/parallel_dataset.h"

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
// the references are shorter than the dataset's lines.
BleuEvaluation dataset_bleu(const SentenceTranslator& translate,
                            const normgrad::data::ParallelDataset& dataset,
                            const std::vector<std::string>& references, const std::string& program);

}  // namespace nmt
