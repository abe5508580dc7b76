#include "evaluation.h"

#include "text/translation_batches.h"
#include "training.h"
#include "translation.h"

namespace transformer_nmt {

namespace ng = normgrad;

double dataset_token_loss(TransformerNmt& model, const ng::text::ParallelDataset& dataset,
                          std::int64_t batch_tokens, ng::Device device,
                          const ng::data::Shard& shard) {
  ng::NoGradGuard no_grad;
  const bool was_training = model.is_training();
  model.eval();
  ng::text::TranslationBatches batches(
      dataset,
      {.max_tokens = batch_tokens, .shuffle = false, .shard = nmt::evaluation_share(shard)},
      device);
  double total = 0;
  std::int64_t tokens = 0;
  for (const auto& pairs : batches.epoch_plan(0)) {
    const auto batch = batches.make_batch(pairs);
    total += batch_loss(model, batch, 0.0).item() * static_cast<double>(batch.target_tokens);
    tokens += batch.target_tokens;
  }
  if (was_training) model.train();
  return nmt::loss_per_token(total, tokens, shard);
}

nmt::BleuEvaluation dataset_bleu(TransformerNmt& model, const ng::text::SubwordTokenizer& tokenizer,
                                 const ng::text::ParallelDataset& dataset,
                                 const std::vector<std::string>& references, std::int64_t beam,
                                 std::int64_t batch_sentences, ng::Device device,
                                 const ng::data::Shard& shard) {
  const nmt::SentenceTranslator translate = [&](const auto& sentences) {
    return translate_sentences(model, tokenizer, sentences, search_options(beam), batch_sentences,
                               device);
  };
  return nmt::dataset_bleu(translate, dataset, references, "transformer_nmt", shard);
}

}  // namespace transformer_nmt
