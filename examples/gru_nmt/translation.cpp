#include "translation.h"

#include <algorithm>

namespace gru_nmt {

namespace ng = normgrad;

RnnSearchDecoder::RnnSearchDecoder(RnnSearch& model, const EncodedSource& source)
    : model_(model), source_(source.attention), state_(source.initial_state) {}

ng::Tensor RnnSearchDecoder::step(const ng::Tensor& previous_tokens) {
  auto next = model_.step(source_, previous_tokens, state_);
  state_ = next.state;
  return ng::log_softmax(next.logits, -1);
}

void RnnSearchDecoder::reorder(const ng::Tensor& rows) {
  state_ = ng::index_select(state_, 0, rows);
  source_.context = ng::index_select(source_.context, 0, rows);
  source_.projected = ng::index_select(source_.projected, 0, rows);
  if (source_.padding_mask.defined())
    source_.padding_mask = ng::index_select(source_.padding_mask, 0, rows);
}

std::vector<std::vector<ng::decoding::Hypothesis>> translate_batch(
    RnnSearch& model, const ng::Tensor& source, const ng::Tensor& source_lengths,
    const ng::Tensor& source_padding, const ng::decoding::BeamSearchOptions& options) {
  ng::NoGradGuard no_grad;
  RnnSearchDecoder decoder(model, model.encode(source, source_lengths, source_padding));
  return ng::decoding::beam_search(
      decoder, source_lengths.to(ng::Device::cpu()).to_vector<std::int64_t>(), options);
}

ng::decoding::BeamSearchOptions search_options(std::int64_t beam, std::int64_t n_best) {
  return {.beam_size = beam,
          .n_best = n_best,
          .bos = ng::text::bos_id,
          .eos = ng::text::eos_id,
          .length_penalty = ng::decoding::LengthPenalty::Average,
          .max_length_a = 2.0,
          .max_length_b = 10};
}

}  // namespace gru_nmt
