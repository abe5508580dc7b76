#include "trainer.h"

#include "text/translation_batches.h"
#include "evaluation.h"
#include "nmt/training_run.h"
#include "training.h"

namespace gru_nmt {

namespace ng = normgrad;

TrainSummary train(const TrainOptions& options) {
  const ModelFolder folder(options.folder);
  nmt::RunStart<Settings> start = nmt::start_run<Settings>(folder, options);
  const Settings& settings = start.settings;
  nmt::RunData& data = start.data;
  const TrainingSettings& t = settings.training;

  ng::Generator generator(t.seed);
  RnnSearch model(settings.model, generator);
  if (!options.device.is_cpu()) model.to(options.device);
  const auto parallel = nmt::data_parallel(model, generator, options.job);
  ng::optim::Adam adam(model.parameters(), {.lr = t.learning_rate});
  ng::text::TranslationBatches batches(
      data.train,
      {.max_sentences = t.batch_sentences, .seed = t.seed, .shard = options.job.shard()},
      options.device);

  nmt::LoopCallbacks callbacks;
  callbacks.train_step = [&](const ng::text::TranslationBatch& batch, std::int64_t) {
    const StepResult result = train_step(model, adam, batch,
                                         {.label_smoothing = t.label_smoothing,
                                          .clip_norm = t.clip_norm,
                                          .dropout_generator = &generator});
    return nmt::StepReport{result.loss, result.token_loss, t.learning_rate};
  };
  callbacks.dev_loss = [&] {
    return dataset_token_loss(model, data.dev, t.batch_sentences, options.device,
                              options.job.shard());
  };
  callbacks.dev_bleu = [&] {
    return dataset_bleu(model, data.tokenizer, data.dev, data.dev_references, t.dev_beam,
                        t.batch_sentences, options.device, options.job.shard());
  };
  nmt::set_checkpoint_callbacks(callbacks, model, adam, generator, options.job);
  return nmt::run_training_loop(folder, batches, data.tokenizer, nmt::loop_budget(t), callbacks,
                                {.resume = options.resume,
                                 .progress_bar = options.progress_bar,
                                 .messages = options.messages,
                                 .job = options.job});
}

}  // namespace gru_nmt
