#pragma once
// A translation program as this library drives it. gru_nmt and transformer_nmt differ in their
// models; their `train`, `translate`, `score` and `experiment` are written once, here and in
// commands.h and experiment_runs.h, for a `Program` that says what is the model's own (its
// functions are static members, or references to the program's own functions):
//
//   struct Program {
//     static constexpr const char* name;   // "gru_nmt": the folder's, the errors'
//     using Settings = ...;                // {ModelConfig model; TrainingSettings training;},
//                                          // with for_each_setting and check beside it
//     using Model = ...;                   // an nn::Module built from (settings.model, generator)
//     static BatchingOptions batching(const TrainingSettings&);   // a batch's limits
//     static std::int64_t translation_batch(const TrainingSettings&);  // sentences, dev BLEU
//     static AdamOptions adam(const TrainingSettings&);
//     static StepReport train_step(Model&, Optimizer&, const TranslationBatch&,
//                                  std::int64_t step, const TrainingSettings&, Generator&);
//     static double summed_loss(Model&, const TranslationBatch&);   // the dev loss's
//     static BeamSearchOptions search_options(std::int64_t beam, std::int64_t n_best);
//     static Hypotheses translate_batch(Model&, const SourceBatch&, const BeamSearchOptions&);
//     static Tensor log_probabilities(Model&, const SourceBatch&, const TargetBatch&);
//   };

#include <normgrad/normgrad.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "nmt/evaluation.h"
#include "nmt/model_folder.h"
#include "nmt/sentence_batches.h"
#include "nmt/training_run.h"
#include "text/subword_tokenizer.h"

namespace nmt {

// What translate and score load: the settings, the tokenizer, and the model with its weights,
// checked against each other, in evaluation mode.
template <class Program> struct LoadedModel {
  typename Program::Settings settings;
  normgrad::text::SubwordTokenizer tokenizer;
  std::unique_ptr<typename Program::Model> model;
  std::string weights;  // the file the weights came from
};

// The folder's model with the weights weights_file(`weights`) names: the best (or the latest,
// before any dev BLEU) when empty. `generator` must outlive the model.
template <class Program>
LoadedModel<Program> load_model_folder(const ProgramFolder<Program>& folder,
                                       normgrad::Generator& generator,
                                       const std::string& weights = "") {
  NG_CHECK(folder.has_config(), folder.program(), folder.path(), " is not a ", folder.program(),
           " model folder (no config.json)");
  std::string fingerprint;
  auto settings = folder.read_config(&fingerprint);
  auto tokenizer = folder.load_tokenizer(fingerprint, settings.model.vocabulary_size);
  auto model = std::make_unique<typename Program::Model>(settings.model, generator);
  const std::string file = folder.load_weights(*model, tokenizer, weights);
  model->eval();
  return {std::move(settings), std::move(tokenizer), std::move(model), file};
}

// The best translation of each sentence (subword ids without eos) with the program's search, in
// batches as translate_n_best makes them.
template <class Program>
std::vector<std::string> translate_sentences(
    typename Program::Model& model, const normgrad::text::SubwordTokenizer& tokenizer,
    const std::vector<std::vector<std::int32_t>>& sentences,
    const normgrad::decoding::BeamSearchOptions& options, std::int64_t batch_sentences,
    normgrad::Device device) {
  const BatchTranslator translator = [&](const SourceBatch& source) {
    return Program::translate_batch(model, source, options);
  };
  return best_translations(
      translate_n_best(translator, tokenizer, sentences, batch_sentences, device));
}

// The program's `train`: the training run of one model folder (training_run.h) with its model,
// its batches, Adam and its training step; the dev loss with its loss, the dev BLEU with its
// search.
template <class Program>
TrainSummary train(const TrainOptions<typename Program::Settings>& options) {
  const ProgramFolder<Program> folder(options.folder);
  auto start = start_run(folder, options);  // no structured binding: the lambdas use its parts
  const auto& t = start.settings.training;
  RunData& data = start.data;
  // One generator draws the initial weights and every dropout mask, and is saved with each
  // training state: a resumed run draws what the uninterrupted one would have.
  normgrad::Generator generator(t.seed);
  typename Program::Model model(start.settings.model, generator);
  if (!options.device.is_cpu()) model.to(options.device);
  const auto parallel = data_parallel(model, generator, options.job);
  normgrad::optim::Adam adam(model.parameters(), Program::adam(t));
  normgrad::text::BatchingOptions batching = Program::batching(t);
  batching.seed = t.seed;
  batching.shard = options.job.shard();
  normgrad::text::TranslationBatches batches(data.train, batching, options.device);

  Trainee trainee{.model = model, .optimizer = adam, .generator = generator};
  trainee.train_step = [&](const normgrad::text::TranslationBatch& batch, std::int64_t step) {
    return Program::train_step(model, adam, batch, step, t, generator);
  };
  trainee.dev_loss = [&] {
    const SummedLoss loss = [&](const auto& batch) { return Program::summed_loss(model, batch); };
    return dataset_token_loss(model, loss, data.dev, Program::batching(t), options.device,
                              options.job.shard());
  };
  trainee.dev_bleu = [&] {
    const SentenceTranslator translate = [&](const auto& sentences) {
      return translate_sentences<Program>(model, data.tokenizer, sentences,
                                          Program::search_options(t.dev_beam, 1),
                                          Program::translation_batch(t), options.device);
    };
    return dataset_bleu(model, translate, data.dev, data.dev_references, folder.program(),
                        options.job.shard());
  };
  return run_training_loop(folder, batches, data.tokenizer, t, trainee,
                           {.resume = options.resume,
                            .progress_bar = options.progress_bar,
                            .messages = options.messages,
                            .job = options.job,
                            .profile = options.profile});
}

}  // namespace nmt
