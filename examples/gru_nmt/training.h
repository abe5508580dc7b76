#pragma once
// One training step of RNNSearch as the paper trains it: teacher forcing, cross-entropy with
// label smoothing 0.1 summed over each sentence's tokens and averaged over the sentences
// (Nematus's loss), gradients clipped to a global norm of 1, then Adam. The step sorts the
// batch's rows by target length so that the decoder runs on the sentences still going only.

#include <normgrad/normgrad.h>

#include "model.h"
#include "nmt/training_run.h"
#include "text/translation_batches.h"

namespace gru_nmt {

struct StepSettings {
  double label_smoothing = 0.1;
  double clip_norm = 1.0;  // <= 0: no clipping
  // Where the dropout masks come from when the model's config asks for dropout (then it must
  // be set); a run's own generator, saved with its training state, makes resume exact.
  normgrad::Generator* dropout_generator = nullptr;
};

// The batch with its rows in order of target length, longest first (stable), as batch_loss
// wants them. The loss of a batch does not depend on the order of its rows.
normgrad::text::TranslationBatch sort_by_target_length(
    const normgrad::text::TranslationBatch& batch);

// The loss of a batch sorted by sort_by_target_length: sum over real target tokens (eos
// included, padding excluded) of the smoothed cross-entropy, divided by the number of
// sentences, computed at the real positions only (RnnSearch::forward_packed). `dropout`: the
// sorted batch's masks in training, or nullptr. An Error for an unsorted batch.
normgrad::Tensor batch_loss(RnnSearch& model, const normgrad::text::TranslationBatch& sorted,
                            double label_smoothing, const DropoutMasks* dropout = nullptr);

// The step: its loss is batch_loss, its token_loss the same per target token.
nmt::StepReport train_step(RnnSearch& model, normgrad::optim::Optimizer& optimizer,
                           const normgrad::text::TranslationBatch& batch,
                           const StepSettings& settings = {});

}  // namespace gru_nmt
