#include "program.h"

#include "training.h"
#include "translation.h"

namespace gru_nmt {

namespace ng = normgrad;

nmt::StepReport Program::train_step(Model& model, ng::optim::Optimizer& optimizer,
                                    const ng::text::TranslationBatch& batch, std::int64_t,
                                    const TrainingSettings& t, ng::Generator& generator) {
  const StepResult result = gru_nmt::train_step(model, optimizer, batch,
                                                {.label_smoothing = t.label_smoothing,
                                                 .clip_norm = t.clip_norm,
                                                 .dropout_generator = &generator});
  return {result.loss, result.token_loss, t.learning_rate};
}

double Program::summed_loss(Model& model, const ng::text::TranslationBatch& batch) {
  return batch_loss(model, sort_by_target_length(batch), 0.0).item() *
         static_cast<double>(batch.pairs.size());
}

ng::decoding::BeamSearchOptions Program::search_options(std::int64_t beam, std::int64_t n_best) {
  return gru_nmt::search_options(beam, n_best);
}

std::vector<std::vector<ng::decoding::Hypothesis>> Program::translate_batch(
    Model& model, const nmt::SourceBatch& source, const ng::decoding::BeamSearchOptions& options) {
  return gru_nmt::translate_batch(model, source.ids, source.lengths, source.padding, options);
}

ng::Tensor Program::log_probabilities(Model& model, const nmt::SourceBatch& source,
                                      const nmt::TargetBatch& target) {
  const ng::Tensor logits =
      model.forward(model.encode(source.ids, source.lengths, source.padding), target.input);
  return ng::log_softmax(logits.to(model.config().dtype), -1);  // float32 in mixed precision
}

nmt::TrainSummary train(const TrainOptions& options) { return nmt::train<Program>(options); }

}  // namespace gru_nmt
