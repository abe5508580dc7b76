#pragma once
// RNNSearch as the translation programs' library drives a model (nmt/program.h): how it is
// batched, trained, measured on the dev set, searched and scored. The rest of gru_nmt's train,
// translate, score and experiment is nmt's, shared with transformer_nmt.

#include <normgrad/normgrad.h>

#include <cstdint>

#include "model.h"
#include "nmt/program.h"
#include "settings.h"
#include "text/translation_batches.h"
#include "training.h"
#include "translation.h"

namespace gru_nmt {

struct Program {
  static constexpr const char* name = "gru_nmt";
  using Settings = gru_nmt::Settings;
  using Model = RnnSearch;

  // Batches of batch_sentences sentences, in training and on the dev set, and as many
  // sentences a batch when the dev set is translated.
  static normgrad::text::BatchingOptions batching(const TrainingSettings& t) {
    return {.max_sentences = t.batch_sentences};
  }
  static std::int64_t translation_batch(const TrainingSettings& t) { return t.batch_sentences; }
  static normgrad::optim::AdamOptions adam(const TrainingSettings& t) {
    return {.lr = t.learning_rate};
  }
  // The paper's step (training.h), its dropout masks drawn from the run's generator.
  static nmt::StepReport train_step(Model& model, normgrad::optim::Optimizer& optimizer,
                                    const normgrad::text::TranslationBatch& batch, std::int64_t,
                                    const TrainingSettings& t, normgrad::Generator& generator) {
    return gru_nmt::train_step(model, optimizer, batch,
                               {.label_smoothing = t.label_smoothing,
                                .clip_norm = t.clip_norm,
                                .dropout_generator = &generator});
  }
  // batch_loss without label smoothing, times the batch's sentences.
  static double summed_loss(Model& model, const normgrad::text::TranslationBatch& batch) {
    return batch_loss(model, sort_by_target_length(batch), 0.0).item() *
           static_cast<double>(batch.pairs.size());
  }
  // translation.h's search.
  static constexpr auto& search_options = gru_nmt::search_options;
  static auto translate_batch(Model& model, const nmt::SourceBatch& source,
                              const normgrad::decoding::BeamSearchOptions& options) {
    return gru_nmt::translate_batch(model, source.ids, source.lengths, source.padding, options);
  }
  // Teacher forcing's log-probabilities [rows, width, V], for score.
  static normgrad::Tensor log_probabilities(Model& model, const nmt::SourceBatch& source,
                                            const nmt::TargetBatch& target) {
    const normgrad::Tensor logits =
        model.forward(model.encode(source.ids, source.lengths, source.padding), target.input);
    // In float32, in mixed precision too.
    return normgrad::log_softmax(logits.to(model.config().dtype), -1);
  }
};

using ModelFolder = nmt::ProgramFolder<Program>;
using LoadedModel = nmt::LoadedModel<Program>;
using nmt::load_model_folder;
using TrainOptions = nmt::TrainOptions<Settings>;

// gru_nmt train: the whole training run of one model folder (nmt::train). A new run trains the
// tokenizer on the training text and writes the folder's configuration; every step logs a CSV
// row; dev loss and dev BLEU are measured at their intervals, the best weights kept, and
// training stops early after `patience` BLEU evaluations without a new best; training states
// are written at their interval and at the end. --resume continues from the newest training
// state with the same batches, the same random numbers and so the same losses as an
// uninterrupted run.
nmt::TrainSummary train(const TrainOptions& options);

}  // namespace gru_nmt
