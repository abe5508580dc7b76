#include "translation.h"

namespace transformer_nmt {

namespace ng = normgrad;

TransformerNmtDecoder::TransformerNmtDecoder(TransformerNmt& model, const ng::Tensor& memory,
                                             const ng::Tensor& source_padding)
    : model_(model),
      cache_(model.start_decoding(memory, source_padding)),
      device_(memory.device()) {}

ng::Tensor TransformerNmtDecoder::step(const ng::Tensor& previous_tokens) {
  return ng::log_softmax(model_.decode_step(previous_tokens, cache_), -1);
}

void TransformerNmtDecoder::reorder(const ng::Tensor& rows) { cache_.reorder(rows); }

UncachedDecoder::UncachedDecoder(TransformerNmt& model, const ng::Tensor& memory,
                                 const ng::Tensor& source_padding)
    : model_(model), memory_(memory), source_padding_(source_padding) {}

ng::Tensor UncachedDecoder::step(const ng::Tensor& previous_tokens) {
  const std::int64_t rows = previous_tokens.size(0);
  const ng::Tensor column = previous_tokens.reshape({rows, 1});
  prefix_ = prefix_.defined() ? ng::cat({prefix_, column}, 1) : column;
  const ng::Tensor logits = model_.forward(memory_, source_padding_, prefix_);  // [rows, t, V]
  return ng::log_softmax(logits.select(1, prefix_.size(1) - 1).to(model_.config().dtype), -1);
}

void UncachedDecoder::reorder(const ng::Tensor& rows) {
  memory_ = ng::index_select(memory_, 0, rows);
  if (source_padding_.defined()) source_padding_ = ng::index_select(source_padding_, 0, rows);
  if (prefix_.defined()) prefix_ = ng::index_select(prefix_, 0, rows);
}

ng::decoding::BeamSearchOptions search_options(std::int64_t beam, std::int64_t n_best) {
  return {.beam_size = beam,
          .n_best = n_best,
          .bos = ng::text::bos_id,
          .eos = ng::text::eos_id,
          .length_penalty = ng::decoding::LengthPenalty::Gnmt,
          .alpha = 0.6,
          .max_length_a = 2.0,
          .max_length_b = 10};
}

std::vector<std::vector<ng::decoding::Hypothesis>> translate_batch(
    TransformerNmt& model, const nmt::SourceBatch& source,
    const ng::decoding::BeamSearchOptions& options, bool cached) {
  ng::NoGradGuard no_grad;
  const bool was_training = model.is_training();
  model.eval();
  const ng::Tensor memory = model.encode(source.ids, source.padding);
  const auto lengths = source.lengths.to(ng::Device::cpu()).to_vector<std::int64_t>();
  std::vector<std::vector<ng::decoding::Hypothesis>> results;
  if (cached) {
    TransformerNmtDecoder decoder(model, memory, source.padding);
    results = ng::decoding::beam_search(decoder, lengths, options);
  } else {
    UncachedDecoder decoder(model, memory, source.padding);
    results = ng::decoding::beam_search(decoder, lengths, options);
  }
  if (was_training) model.train();
  return results;
}

}  // namespace transformer_nmt
