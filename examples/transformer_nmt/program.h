#pragma once
// The Transformer as the translation programs' library drives a model (nmt/program.h): how it
// is batched, trained on its schedule, measured on the dev set, searched and scored. The rest of
// transformer_nmt's train, translate, score and experiment is nmt's, shared with gru_nmt; its
// `average` is its own.

#include <normgrad/normgrad.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "model.h"
#include "nmt/program.h"
#include "settings.h"
#include "text/translation_batches.h"
#include "training.h"
#include "translation.h"

namespace transformer_nmt {

struct Program {
  static constexpr const char* name = "transformer_nmt";
  using Settings = transformer_nmt::Settings;
  using Model = TransformerNmt;

  // Batches of about batch_tokens tokens, in training and on the dev set; the dev set is
  // translated in batches of about as many tokens.
  static normgrad::text::BatchingOptions batching(const TrainingSettings& t) {
    return {.max_tokens = t.batch_tokens};
  }
  static std::int64_t translation_batch(const TrainingSettings& t) {
    return std::max<std::int64_t>(1, t.batch_tokens / 40);
  }
  // Adam with beta2 0.98, as the paper; the schedule sets the learning rate of every step.
  static normgrad::optim::AdamOptions adam(const TrainingSettings& t) {
    return {.lr = t.learning_rate, .beta2 = t.adam_beta2, .eps = 1e-9};
  }
  // training.h's step at the schedule's rate of `step`.
  static nmt::StepReport train_step(Model& model, normgrad::optim::Optimizer& optimizer,
                                    const normgrad::text::TranslationBatch& batch,
                                    std::int64_t step, const TrainingSettings& t,
                                    normgrad::Generator&) {
    return transformer_nmt::train_step(
        model, optimizer, batch,
        {.learning_rate = learning_rate_at(t.learning_rate, t.warmup_steps, step),
         .label_smoothing = t.label_smoothing,
         .clip_norm = t.clip_norm});
  }
  // batch_loss without label smoothing, times the batch's target tokens.
  static double summed_loss(Model& model, const normgrad::text::TranslationBatch& batch) {
    return batch_loss(model, batch, 0.0).item() * static_cast<double>(batch.target_tokens);
  }
  // translation.h's search, with the cache.
  static constexpr auto& search_options = transformer_nmt::search_options;
  static auto translate_batch(Model& model, const nmt::SourceBatch& source,
                              const normgrad::decoding::BeamSearchOptions& options) {
    return transformer_nmt::translate_batch(model, source, options);
  }
  // Teacher forcing's log-probabilities [rows, width, V], for score.
  static normgrad::Tensor log_probabilities(Model& model, const nmt::SourceBatch& source,
                                            const nmt::TargetBatch& target) {
    const normgrad::Tensor memory = model.encode(source.ids, source.padding);
    const normgrad::Tensor logits = model.forward(memory, source.padding, target.input);
    // In float32, in mixed precision too.
    return normgrad::log_softmax(logits.to(model.config().dtype), -1);
  }
};

using ModelFolder = nmt::ProgramFolder<Program>;
using LoadedModel = nmt::LoadedModel<Program>;
using nmt::load_model_folder;
using TrainOptions = nmt::TrainOptions<Settings>;

// transformer_nmt train: the whole training run of one model folder (nmt::train): the
// tokenizer and the folder, batches of about batch_tokens tokens, Adam with beta2 0.98 on the
// inverse-square-root schedule, dev loss and BLEU at their intervals, training states and exact
// resume.
nmt::TrainSummary train(const TrainOptions& options);

// transformer_nmt average: the mean of the model weights of the folder's last `last` training
// states (nmt/checkpoint_average.h), checked to load into the folder's model and written
// atomically to `output` in the folder, with the tokenizer's fingerprint and the steps
// averaged. Returns the steps. An Error when the folder holds fewer training states.
std::vector<std::int64_t> average_checkpoints(const ModelFolder& folder, std::int64_t last,
                                              const std::string& output);

}  // namespace transformer_nmt
