#pragma once
// Decoding with RNNSearch: the model as a decoding::StepDecoder, so that the library's batched
// beam search (and greedy search, its beam of 1) can translate with it.
//
//   RnnSearchDecoder decoder(model, model.encode(source, lengths, padding));
//   auto n_best = decoding::beam_search(decoder, source_token_counts, options);
//
// A row holds one hypothesis: its decoder state s_t and its sentence's encoder output (the
// context C, its projection for the attention, and the padding mask). reorder() follows the
// search's rows with index_select on all of them.

#include <normgrad/normgrad.h>

#include "decoding/beam_search.h"
#include "model.h"
#include "text/subword_tokenizer.h"

namespace gru_nmt {

class RnnSearchDecoder final : public normgrad::decoding::StepDecoder {
 public:
  RnnSearchDecoder(RnnSearch& model, const EncodedSource& source);

  std::int64_t vocab_size() const override { return model_.config().vocabulary_size; }
  normgrad::Device device() const override { return state_.device(); }
  normgrad::Tensor step(const normgrad::Tensor& previous_tokens) override;  // log-probabilities
  void reorder(const normgrad::Tensor& rows) override;

 private:
  RnnSearch& model_;
  normgrad::nn::AdditiveAttention::ProjectedContext source_;
  normgrad::Tensor state_;
};

// The search gru_nmt translates with: a beam of `beam` (1: greedy), the `n_best` best
// hypotheses, scores normalised by length (the average log-probability), and hypotheses cut at
// twice the source length and 10 tokens more.
normgrad::decoding::BeamSearchOptions search_options(std::int64_t beam, std::int64_t n_best = 1);

// Translates a batch of source sentences (ids [B, S] with lengths and padding, as
// text::TranslationBatch holds them) with beam search; `options` must carry bos and eos.
std::vector<std::vector<normgrad::decoding::Hypothesis>> translate_batch(
    RnnSearch& model, const normgrad::Tensor& source, const normgrad::Tensor& source_lengths,
    const normgrad::Tensor& source_padding, const normgrad::decoding::BeamSearchOptions& options);

}  // namespace gru_nmt
