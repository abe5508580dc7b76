#pragma once
// Decoding with the Transformer: the model as a decoding::StepDecoder over its key/value
// cache, so that the library's batched beam search translates with it.
//
//   TransformerNmtDecoder decoder(model, model.encode(source, padding), padding);
//   auto n_best = decoding::beam_search(decoder, source_token_counts, options);
//
// Each step feeds only the new position: every decoder layer keeps the keys and values of the
// positions so far (and of the encoder's output), so step t costs O(t), not a recomputation
// of the prefix. reorder() follows the search's rows with one index_select of each cache.
// UncachedDecoder is the same search by recomputation, kept as the cache's tested twin and
// for the benchmark of what the cache saves.

#include <normgrad/normgrad.h>

#include <cstdint>
#include <string>
#include <vector>

#include "decoding/beam_search.h"
#include "model.h"
#include "nmt/sentence_batches.h"
#include "text/subword_tokenizer.h"

namespace transformer_nmt {

class TransformerNmtDecoder final : public normgrad::decoding::StepDecoder {
 public:
  TransformerNmtDecoder(TransformerNmt& model, const normgrad::Tensor& memory,
                        const normgrad::Tensor& source_padding);

  std::int64_t vocab_size() const override { return model_.config().vocabulary_size; }
  normgrad::Device device() const override { return device_; }
  normgrad::Tensor step(const normgrad::Tensor& previous_tokens) override;  // log-probabilities
  void reorder(const normgrad::Tensor& rows) override;

 private:
  TransformerNmt& model_;
  normgrad::nn::TransformerDecoderCache cache_;
  normgrad::Device device_;
};

// Recomputes the whole prefix at every step (forward() over the tokens so far).
class UncachedDecoder final : public normgrad::decoding::StepDecoder {
 public:
  UncachedDecoder(TransformerNmt& model, const normgrad::Tensor& memory,
                  const normgrad::Tensor& source_padding);

  std::int64_t vocab_size() const override { return model_.config().vocabulary_size; }
  normgrad::Device device() const override { return memory_.device(); }
  normgrad::Tensor step(const normgrad::Tensor& previous_tokens) override;
  void reorder(const normgrad::Tensor& rows) override;

 private:
  TransformerNmt& model_;
  normgrad::Tensor memory_, source_padding_;
  normgrad::Tensor prefix_;  // int64 [rows, t]: the tokens fed so far
};

// The search transformer_nmt translates with: a beam of `beam` (1: greedy), the `n_best` best
// hypotheses, GNMT's length penalty with alpha 0.6 (Vaswani et al.'s), and hypotheses cut at
// twice the source length and 10 tokens more.
normgrad::decoding::BeamSearchOptions search_options(std::int64_t beam, std::int64_t n_best = 1);

// Translates a batch of sources with beam search, cached (or, with cached = false, by
// recomputation); `options` must carry bos and eos.
std::vector<std::vector<normgrad::decoding::Hypothesis>> translate_batch(
    TransformerNmt& model, const nmt::SourceBatch& source,
    const normgrad::decoding::BeamSearchOptions& options, bool cached = true);

}  // namespace transformer_nmt
