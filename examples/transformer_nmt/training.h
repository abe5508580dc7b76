#pragma once
// One training step of the Transformer as the paper trains it: teacher forcing over a batch of
// about batch_tokens tokens, cross-entropy with label smoothing 0.1 averaged over the batch's
// real target tokens, then Adam (beta2 0.98) at the step's learning rate.

#include <normgrad/normgrad.h>

#include "model.h"
#include "nmt/training_run.h"
#include "text/translation_batches.h"

namespace transformer_nmt {

// The mean over the batch's real target tokens (eos included, padding excluded) of the
// smoothed cross-entropy.
normgrad::Tensor batch_loss(TransformerNmt& model, const normgrad::text::TranslationBatch& batch,
                            double label_smoothing);

struct StepSettings {
  double learning_rate = 1e-3;  // this step's, from the schedule
  double label_smoothing = 0.1;
  double clip_norm = 0;  // <= 0: no clipping
};

// The step: its loss and token_loss are both batch_loss, per target token.
nmt::StepReport train_step(TransformerNmt& model, normgrad::optim::Optimizer& optimizer,
                           const normgrad::text::TranslationBatch& batch,
                           const StepSettings& settings = {});

// The schedule of a run's settings: the learning rate of step `step` (counting from 0).
double learning_rate_at(double peak, std::int64_t warmup_steps, std::int64_t step);

}  // namespace transformer_nmt
