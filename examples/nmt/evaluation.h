#pragma once
// Measuring a model on a held-out set during training, whatever the model: the cross-entropy per
// target token, and BLEU of its translations against the untouched reference text. The model
// comes in as the module (put in evaluation mode while it is measured) and a function: its
// summed loss of a batch, or its translations of source sentences.

#include <normgrad/normgrad.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "data/shards.h"
#include "text/parallel_dataset.h"
#include "text/translation_batches.h"

namespace nmt {

struct BleuEvaluation {
  double bleu = 0;
  std::string text;                       // sacreBLEU's line
  std::vector<std::string> translations;  // one per pair of the dataset, in its order
};

// Source sentences (subword ids without eos) to one translation each.
using SentenceTranslator = std::function<std::vector<std::string>(
    const std::vector<std::vector<std::int32_t>>& sentences)>;

// A batch's loss summed over its real target tokens (eos included, no label smoothing).
using SummedLoss = std::function<double(const normgrad::text::TranslationBatch& batch)>;

// Cross-entropy per target token over the whole dataset, in unshuffled batches of `batching`'s
// limits. In data-parallel training (`shard` of several) each rank measures its share of the
// batches, and every rank returns the whole dataset's.
double dataset_token_loss(normgrad::nn::Module& model, const SummedLoss& summed_loss,
                          const normgrad::text::ParallelDataset& dataset,
                          normgrad::text::BatchingOptions batching, normgrad::Device device,
                          const normgrad::data::Shard& shard = {});

// Translates the dataset's sources and scores them with BLEU against `references`, the
// reference file's lines (dataset.line(i) picks each pair's); an Error naming `program` when
// the references are shorter than the dataset's lines. In data-parallel training (`shard` of
// several) each rank translates every count-th sentence from its index, and the ranks gather
// all translations: every rank returns the same, the whole dataset's score.
BleuEvaluation dataset_bleu(normgrad::nn::Module& model, const SentenceTranslator& translate,
                            const normgrad::text::ParallelDataset& dataset,
                            const std::vector<std::string>& references, const std::string& program,
                            const normgrad::data::Shard& shard = {});

}  // namespace nmt
