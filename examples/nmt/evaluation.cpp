#include "evaluation.h"

#include <normgrad/normgrad.h>

#include "distributed/collectives.h"
#include "text/bleu.h"

namespace nmt {

namespace ng = normgrad;

double dataset_token_loss(ng::nn::Module& model, const SummedLoss& summed_loss,
                          const ng::text::ParallelDataset& dataset,
                          ng::text::BatchingOptions batching, ng::Device device,
                          const ng::data::Shard& shard) {
  ng::NoGradGuard no_grad;
  const bool was_training = model.is_training();
  model.eval();
  // Every batch dealt, the shares unequal where they do not divide.
  batching.shuffle = false;
  batching.shard = shard;
  batching.shard.equal = false;
  ng::text::TranslationBatches batches(dataset, batching, device);
  double total = 0;
  std::int64_t tokens = 0;
  for (const auto& pairs : batches.epoch_plan(0)) {
    const auto batch = batches.make_batch(pairs);
    total += summed_loss(batch);
    tokens += batch.target_tokens;
  }
  if (was_training) model.train();
  if (shard.count > 1) {  // each rank's sums added over the ranks
    const std::vector<double> sums = ng::distributed::sum_over_ranks(
        ng::distributed::ProcessGroup::world(), {total, static_cast<double>(tokens)});
    total = sums[0];
    tokens = static_cast<std::int64_t>(sums[1]);
  }
  return tokens == 0 ? 0.0 : total / static_cast<double>(tokens);
}

BleuEvaluation dataset_bleu(ng::nn::Module& model, const SentenceTranslator& translate,
                            const ng::text::ParallelDataset& dataset,
                            const std::vector<std::string>& references, const std::string& program,
                            const ng::data::Shard& shard) {
  std::vector<std::vector<std::int32_t>> sources;
  std::vector<std::string> kept_references;
  for (std::size_t i = 0; i < dataset.size(); ++i) {
    const auto source = dataset.source(i);
    sources.emplace_back(source.begin(), source.end());
    NG_CHECK(dataset.line(i) <= references.size(), program, "the references have ",
             references.size(), " lines, but the dataset has a pair from line ", dataset.line(i));
    kept_references.push_back(references[dataset.line(i) - 1]);
  }
  const bool was_training = model.is_training();
  model.eval();
  BleuEvaluation result;
  if (shard.count == 1) {
    result.translations = translate(sources);
  } else {
    std::vector<std::vector<std::int32_t>> mine;
    for (std::size_t i = static_cast<std::size_t>(shard.index); i < sources.size();
         i += static_cast<std::size_t>(shard.count))
      mine.push_back(sources[i]);
    const auto every_ranks = ng::distributed::all_gather_strings(
        ng::distributed::ProcessGroup::world(), translate(mine));
    result.translations.resize(sources.size());
    for (std::size_t r = 0; r < every_ranks.size(); ++r)
      for (std::size_t k = 0; k < every_ranks[r].size(); ++k)
        result.translations[r + k * every_ranks.size()] = every_ranks[r][k];
  }
  if (was_training) model.train();
  const std::vector<std::vector<std::string>> reference_streams{kept_references};
  const auto score = ng::text::Bleu().corpus_score(result.translations, reference_streams);
  result.bleu = score.score;
  result.text = score.format();
  return result;
}

}  // namespace nmt
