#include "training.h"

namespace transformer_nmt {

namespace ng = normgrad;

ng::Tensor batch_loss(TransformerNmt& model, const ng::text::TranslationBatch& batch,
                      double label_smoothing) {
  const ng::Tensor memory = model.encode(batch.source, batch.source_padding);
  const ng::Tensor logits = model.forward(memory, batch.source_padding, batch.target_input);
  const std::int64_t V = logits.size(2);
  const ng::Tensor total =
      ng::nn::cross_entropy(logits.reshape({logits.numel() / V, V}),
                            batch.target_output.reshape({batch.target_output.numel()}),
                            {.ignore_index = ng::text::pad_id,
                             .label_smoothing = label_smoothing,
                             .reduction = ng::nn::Reduction::Sum});
  return ng::div(total, static_cast<double>(batch.target_tokens));
}

nmt::StepReport train_step(TransformerNmt& model, ng::optim::Optimizer& optimizer,
                           const ng::text::TranslationBatch& batch, const StepSettings& settings) {
  optimizer.zero_grad();
  optimizer.set_lr(settings.learning_rate);
  const ng::Tensor loss = batch_loss(model, batch, settings.label_smoothing);
  return nmt::backward_and_step(loss, model, optimizer, settings.clip_norm, batch.target_tokens);
}

double learning_rate_at(double peak, std::int64_t warmup_steps, std::int64_t step) {
  return ng::optim::InverseSqrtSchedule{.base = peak, .warmup = warmup_steps}(step);
}

}  // namespace transformer_nmt
