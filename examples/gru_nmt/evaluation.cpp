#include "evaluation.h"

#include "data/bleu.h"
#include "data/translation_batches.h"
#include "training.h"
#include "translation.h"

namespace gru_nmt {

namespace ng = normgrad;

double dataset_token_loss(RnnSearch& model, const ng::data::ParallelDataset& dataset,
                          std::int64_t batch_sentences, ng::Device device) {
  ng::NoGradGuard no_grad;
  const bool was_training = model.is_training();
  model.eval();
  ng::data::TranslationBatches batches(
      dataset, {.max_sentences = batch_sentences, .shuffle = false}, device);
  double total = 0;
  std::int64_t tokens = 0;
  for (const auto& pairs : batches.epoch_plan(0)) {
    const auto batch = batches.make_batch(pairs);
    total += batch_loss(model, sort_by_target_length(batch), 0.0).item() *
             static_cast<double>(batch.pairs.size());
    tokens += batch.target_tokens;
  }
  if (was_training) model.train();
  return tokens == 0 ? 0.0 : total / static_cast<double>(tokens);
}

BleuEvaluation dataset_bleu(RnnSearch& model, const ng::data::SubwordTokenizer& tokenizer,
                            const ng::data::ParallelDataset& dataset,
                            const std::vector<std::string>& references, std::int64_t beam,
                            std::int64_t batch_sentences, ng::Device device) {
  const bool was_training = model.is_training();
  model.eval();
  std::vector<std::vector<std::int32_t>> sources;
  std::vector<std::string> kept_references;
  for (std::size_t i = 0; i < dataset.size(); ++i) {
    const auto source = dataset.source(i);
    sources.emplace_back(source.begin(), source.end());
    NG_CHECK(dataset.line(i) <= references.size(), "gru_nmt", "the references have ",
             references.size(), " lines, but the dataset has a pair from line ", dataset.line(i));
    kept_references.push_back(references[dataset.line(i) - 1]);
  }
  const ng::decoding::BeamSearchOptions options = search_options(beam);
  BleuEvaluation result;
  result.translations =
      translate_sentences(model, tokenizer, sources, options, batch_sentences, device);
  const std::vector<std::vector<std::string>> reference_streams{kept_references};
  const auto score = ng::data::Bleu().corpus_score(result.translations, reference_streams);
  result.bleu = score.score;
  result.text = score.format();
  if (was_training) model.train();
  return result;
}

}  // namespace gru_nmt
