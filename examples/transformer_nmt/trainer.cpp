#include "trainer.h"

#include "evaluation.h"
#include "training.h"

namespace transformer_nmt {

namespace ng = normgrad;

nmt::TrainSummary train(const TrainOptions& options) {
  const ModelFolder folder(options.folder);
  nmt::RunStart<Settings> start = nmt::start_run<Settings>(folder, options);
  const Settings& settings = start.settings;
  nmt::RunData& data = start.data;
  const TrainingSettings& t = settings.training;

  // One generator draws the initial weights and every dropout mask, and is saved with each
  // training state: a resumed run draws what the uninterrupted one would have.
  ng::Generator generator(t.seed);
  TransformerNmt model(settings.model, generator);
  if (!options.device.is_cpu()) model.to(options.device);
  const auto parallel = nmt::data_parallel(model, generator, options.job);
  ng::optim::Adam adam(model.parameters(),
                       {.lr = t.learning_rate, .beta2 = t.adam_beta2, .eps = 1e-9});
  ng::text::TranslationBatches batches(
      data.train, {.max_tokens = t.batch_tokens, .seed = t.seed, .shard = options.job.shard()},
      options.device);
  // Sentences per translation batch for dev BLEU: about as many tokens as a training batch.
  const std::int64_t translate_sentences = std::max<std::int64_t>(1, t.batch_tokens / 40);

  nmt::LoopCallbacks callbacks;
  callbacks.train_step = [&](const ng::text::TranslationBatch& batch, std::int64_t step) {
    const double rate = learning_rate_at(t.learning_rate, t.warmup_steps, step);
    const StepResult result = train_step(
        model, adam, batch,
        {.learning_rate = rate, .label_smoothing = t.label_smoothing, .clip_norm = t.clip_norm});
    return nmt::StepReport{result.loss, result.token_loss, rate};
  };
  callbacks.dev_loss = [&] {
    return dataset_token_loss(model, data.dev, t.batch_tokens, options.device, options.job.shard());
  };
  callbacks.dev_bleu = [&] {
    return dataset_bleu(model, data.tokenizer, data.dev, data.dev_references, t.dev_beam,
                        translate_sentences, options.device, options.job.shard());
  };
  nmt::set_checkpoint_callbacks(callbacks, model, adam, generator, options.job);
  return nmt::run_training_loop(folder, batches, data.tokenizer, nmt::loop_budget(t), callbacks,
                                {.resume = options.resume,
                                 .progress_bar = options.progress_bar,
                                 .messages = options.messages,
                                 .job = options.job});
}

}  // namespace transformer_nmt
