#pragma once
// Measuring a model on a held-out set during training: the cross-entropy per target token and
// BLEU of its translations against the untouched reference text.

#include <normgrad/normgrad.h>

#include <string>
#include <vector>

#include "text/parallel_dataset.h"
#include "text/subword_tokenizer.h"
#include "model.h"
#include "nmt/evaluation.h"

namespace gru_nmt {

// Cross-entropy per target token (eos included, no label smoothing) over the whole dataset. In
// data-parallel training (`shard` of several) each rank measures its share of the batches, and
// every rank returns the whole dataset's.
double dataset_token_loss(RnnSearch& model, const normgrad::text::ParallelDataset& dataset,
                          std::int64_t batch_sentences, normgrad::Device device,
                          const normgrad::data::Shard& shard = {});

using nmt::BleuEvaluation;

// Translates the dataset's sources with a beam of `beam` (1: greedy) and scores them with BLEU
// against `references`, the reference file's lines (dataset.line(i) picks each pair's). With a
// `shard` of several, each rank translates its share and every rank scores them all.
BleuEvaluation dataset_bleu(RnnSearch& model, const normgrad::text::SubwordTokenizer& tokenizer,
                            const normgrad::text::ParallelDataset& dataset,
                            const std::vector<std::string>& references, std::int64_t beam,
                            std::int64_t batch_sentences, normgrad::Device device,
                            const normgrad::data::Shard& shard = {});

}  // namespace gru_nmt
