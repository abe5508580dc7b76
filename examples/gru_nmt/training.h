#pragma once
// One training step of RNNSearch as the paper trains it: teacher forcing, cross-entropy with
// label smoothing 0.1 summed over each sentence's tokens and averaged over the sentences
// (Nematus's loss), gradients clipped to a global norm of 1, then Adam.

#include <normgrad/normgrad.h>

#include "data/translation_batches.h"
#include "model.h"

namespace gru_nmt {

struct StepSettings {
  double label_smoothing = 0.1;
  double clip_norm = 1.0;  // <= 0: no clipping
  // Where the dropout masks come from when the model's config asks for dropout (then it must
  // be set); a run's own generator, saved with its training state, makes resume exact.
  normgrad::Generator* dropout_generator = nullptr;
};

// The loss of a batch: sum over real target tokens (eos included, padding excluded) of the
// smoothed cross-entropy, divided by the number of sentences. `dropout`: the batch's masks
// in training, or nullptr.
normgrad::Tensor batch_loss(RnnSearch& model, const normgrad::data::TranslationBatch& batch,
                            double label_smoothing, const DropoutMasks* dropout = nullptr);

struct StepResult {
  double loss = 0;           // batch_loss
  double token_loss = 0;     // the same per target token: comparable across batches
  double gradient_norm = 0;  // before clipping
  std::int64_t target_tokens = 0;
};

StepResult train_step(RnnSearch& model, normgrad::optim::Optimizer& optimizer,
                      const normgrad::data::TranslationBatch& batch,
                      const StepSettings& settings = {});

}  // namespace gru_nmt
