#include "training.h"

#include <optional>

namespace gru_nmt {

namespace ng = normgrad;

ng::Tensor batch_loss(RnnSearch& model, const ng::data::TranslationBatch& batch,
                      double label_smoothing, const DropoutMasks* dropout) {
  const auto encoded =
      model.encode(batch.source, batch.source_lengths, batch.source_padding, dropout);
  const ng::Tensor logits =
      model.forward(encoded, batch.target_input, nullptr, dropout);  // [B, T, V]
  const ng::Tensor total = ng::nn::cross_entropy(logits, batch.target_output,
                                                 {.ignore_index = ng::data::pad_id,
                                                  .label_smoothing = label_smoothing,
                                                  .reduction = ng::nn::Reduction::Sum});
  return ng::div(total, static_cast<double>(batch.pairs.size()));
}

StepResult train_step(RnnSearch& model, ng::optim::Optimizer& optimizer,
                      const ng::data::TranslationBatch& batch, const StepSettings& settings) {
  optimizer.zero_grad();
  const ModelConfig& config = model.config();
  std::optional<DropoutMasks> masks;
  if (config.dropout_embedding > 0 || config.dropout_hidden > 0) {
    NG_CHECK(settings.dropout_generator != nullptr, "gru_nmt train_step",
             "the model asks for dropout (embedding ", config.dropout_embedding, ", hidden ",
             config.dropout_hidden, ") but no generator was given for its masks");
    masks = model.draw_dropout_masks(static_cast<std::int64_t>(batch.pairs.size()),
                                     *settings.dropout_generator);
  }
  const ng::Tensor loss =
      batch_loss(model, batch, settings.label_smoothing, masks ? &*masks : nullptr);
  loss.backward();
  StepResult result;
  result.loss = loss.item();
  result.target_tokens = batch.target_tokens;
  result.token_loss = result.loss * static_cast<double>(batch.pairs.size()) /
                      static_cast<double>(batch.target_tokens);
  const auto parameters = model.parameters();
  result.gradient_norm = settings.clip_norm > 0
                             ? ng::optim::clip_grad_norm(parameters, settings.clip_norm)
                             : ng::optim::clip_grad_norm(parameters, 1e300);
  optimizer.step();
  return result;
}

}  // namespace gru_nmt
