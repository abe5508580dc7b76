#include "program.h"

#include "nmt/checkpoint_average.h"
#include "training.h"
#include "translation.h"

namespace transformer_nmt {

namespace ng = normgrad;

nmt::StepReport Program::train_step(Model& model, ng::optim::Optimizer& optimizer,
                                    const ng::text::TranslationBatch& batch, std::int64_t step,
                                    const TrainingSettings& t, ng::Generator&) {
  const double rate = learning_rate_at(t.learning_rate, t.warmup_steps, step);
  const StepResult result = transformer_nmt::train_step(
      model, optimizer, batch,
      {.learning_rate = rate, .label_smoothing = t.label_smoothing, .clip_norm = t.clip_norm});
  return {result.loss, result.token_loss, rate};
}

double Program::summed_loss(Model& model, const ng::text::TranslationBatch& batch) {
  return batch_loss(model, batch, 0.0).item() * static_cast<double>(batch.target_tokens);
}

ng::decoding::BeamSearchOptions Program::search_options(std::int64_t beam, std::int64_t n_best) {
  return transformer_nmt::search_options(beam, n_best);
}

std::vector<std::vector<ng::decoding::Hypothesis>> Program::translate_batch(
    Model& model, const nmt::SourceBatch& source, const ng::decoding::BeamSearchOptions& options) {
  return transformer_nmt::translate_batch(model, source, options);
}

ng::Tensor Program::log_probabilities(Model& model, const nmt::SourceBatch& source,
                                      const nmt::TargetBatch& target) {
  const ng::Tensor memory = model.encode(source.ids, source.padding);
  const ng::Tensor logits = model.forward(memory, source.padding, target.input);
  return ng::log_softmax(logits.to(model.config().dtype), -1);  // float32 in mixed precision
}

nmt::TrainSummary train(const TrainOptions& options) { return nmt::train<Program>(options); }

std::vector<std::int64_t> average_checkpoints(const ModelFolder& folder, std::int64_t last,
                                              const std::string& output) {
  NG_CHECK(folder.has_config(), "transformer_nmt average", folder.path(),
           " is not a transformer_nmt model folder (no config.json)");
  NG_CHECK(last >= 1, "transformer_nmt average", "--last must be at least 1, got ", last);
  std::string fingerprint;
  const Settings settings = folder.read_config(&fingerprint);
  const auto steps = folder.checkpoint_steps();
  NG_CHECK(static_cast<std::int64_t>(steps.size()) >= last, "transformer_nmt average",
           folder.path(), " holds ", steps.size(), " training states, fewer than --last ", last,
           " (train keeps --keep-checkpoints of them)");
  const std::vector<std::int64_t> chosen(steps.end() - last, steps.end());
  std::vector<std::string> paths;
  std::string names;
  for (const std::int64_t step : chosen) {
    paths.push_back(folder.checkpoint(step));
    names += (names.empty() ? "" : " ") + std::to_string(step);
  }
  const ng::nn::StateDict mean = nmt::average_model_weights(paths, "transformer_nmt average");
  // The mean must fit the folder's model before it is written.
  ng::Generator generator(0);
  TransformerNmt model(settings.model, generator);
  model.load_state_dict(mean, /*strict=*/true);
  ng::io::save(model, folder.file(output),
               {{ng::text::tokenizer_metadata_key, fingerprint}, {"averaged_steps", names}});
  return chosen;
}

}  // namespace transformer_nmt
