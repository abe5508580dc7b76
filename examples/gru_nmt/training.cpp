#include "training.h"

#include <algorithm>
#include <optional>
#include <vector>

namespace gru_nmt {

namespace ng = normgrad;

namespace {

// The host copy of an int64 vector tensor.
std::vector<std::int64_t> host_values(const ng::Tensor& x) {
  return x.to(ng::Device::cpu()).to_vector<std::int64_t>();
}

}  // namespace

ng::text::TranslationBatch sort_by_target_length(const ng::text::TranslationBatch& batch) {
  const std::vector<std::int64_t> lengths = host_values(batch.target_lengths);
  std::vector<std::int64_t> order(lengths.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = static_cast<std::int64_t>(i);
  std::stable_sort(order.begin(), order.end(), [&](std::int64_t a, std::int64_t b) {
    return lengths[static_cast<std::size_t>(a)] > lengths[static_cast<std::size_t>(b)];
  });
  const ng::Tensor index = ng::from_vector(order, {static_cast<std::int64_t>(order.size())})
                               .to(batch.target_lengths.device());
  const auto rows = [&](const ng::Tensor& x) { return ng::index_select(x, 0, index); };
  ng::text::TranslationBatch sorted = batch;
  for (std::size_t i = 0; i < order.size(); ++i)
    sorted.pairs[i] = batch.pairs[static_cast<std::size_t>(order[i])];
  sorted.source = rows(batch.source);
  sorted.source_lengths = rows(batch.source_lengths);
  sorted.source_padding = rows(batch.source_padding);
  sorted.target_input = rows(batch.target_input);
  sorted.target_output = rows(batch.target_output);
  sorted.target_lengths = rows(batch.target_lengths);
  sorted.target_padding = rows(batch.target_padding);
  return sorted;
}

ng::Tensor batch_loss(RnnSearch& model, const ng::text::TranslationBatch& sorted,
                      double label_smoothing, const DropoutMasks* dropout) {
  const auto encoded =
      model.encode(sorted.source, sorted.source_lengths, sorted.source_padding, dropout);
  const RnnSearch::PackedLogits packed = model.forward_packed(
      encoded, sorted.target_input, host_values(sorted.target_lengths), dropout);  // [N, V]
  const ng::Tensor targets = ng::index_select(
      sorted.target_output.reshape({sorted.target_output.numel()}), 0, packed.positions);
  const ng::Tensor total = ng::nn::cross_entropy(packed.logits, targets,
                                                 {.ignore_index = ng::text::pad_id,
                                                  .label_smoothing = label_smoothing,
                                                  .reduction = ng::nn::Reduction::Sum});
  return ng::div(total, static_cast<double>(sorted.pairs.size()));
}

nmt::StepReport train_step(RnnSearch& model, ng::optim::Optimizer& optimizer,
                           const ng::text::TranslationBatch& batch, const StepSettings& settings) {
  optimizer.zero_grad();
  const ModelConfig& config = model.config();
  const ng::text::TranslationBatch sorted = sort_by_target_length(batch);
  std::optional<DropoutMasks> masks;
  if (config.dropout_embedding > 0 || config.dropout_hidden > 0) {
    NG_CHECK(settings.dropout_generator != nullptr, "gru_nmt train_step",
             "the model asks for dropout (embedding ", config.dropout_embedding, ", hidden ",
             config.dropout_hidden, ") but no generator was given for its masks");
    masks = model.draw_dropout_masks(static_cast<std::int64_t>(batch.pairs.size()),
                                     *settings.dropout_generator);
  }
  const ng::Tensor loss =
      batch_loss(model, sorted, settings.label_smoothing, masks ? &*masks : nullptr);
  nmt::StepReport step =
      nmt::backward_and_step(loss, model, optimizer, settings.clip_norm, batch.target_tokens);
  step.token_loss = step.loss * static_cast<double>(batch.pairs.size()) /
                    static_cast<double>(batch.target_tokens);
  return step;
}

}  // namespace gru_nmt
