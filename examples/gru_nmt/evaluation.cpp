#include "evaluation.h"

#include "text/translation_batches.h"
#include "training.h"
#include "translation.h"

namespace gru_nmt {

namespace ng = normgrad;

double dataset_token_loss(RnnSearch& model, const ng::text::ParallelDataset& dataset,
                          std::int64_t batch_sentences, ng::Device device,
                          const ng::data::Shard& shard) {
  ng::NoGradGuard no_grad;
  const bool was_training = model.is_training();
  model.eval();
  ng::text::TranslationBatches batches(
      dataset,
      {.max_sentences = batch_sentences, .shuffle = false, .shard = nmt::evaluation_share(shard)},
      device);
  double total = 0;
  std::int64_t tokens = 0;
  for (const auto& pairs : batches.epoch_plan(0)) {
    const auto batch = batches.make_batch(pairs);
    total += batch_loss(model, sort_by_target_length(batch), 0.0).item() *
             static_cast<double>(batch.pairs.size());
    tokens += batch.target_tokens;
  }
  if (was_training) model.train();
  return nmt::loss_per_token(total, tokens, shard);
}

BleuEvaluation dataset_bleu(RnnSearch& model, const ng::text::SubwordTokenizer& tokenizer,
                            const ng::text::ParallelDataset& dataset,
                            const std::vector<std::string>& references, std::int64_t beam,
                            std::int64_t batch_sentences, ng::Device device,
                            const ng::data::Shard& shard) {
  const bool was_training = model.is_training();
  model.eval();
  const nmt::SentenceTranslator translate = [&](const auto& sentences) {
    return translate_sentences(model, tokenizer, sentences, search_options(beam), batch_sentences,
                               device);
  };
  BleuEvaluation result = nmt::dataset_bleu(translate, dataset, references, "gru_nmt", shard);
  if (was_training) model.train();
  return result;
}

}  // namespace gru_nmt
