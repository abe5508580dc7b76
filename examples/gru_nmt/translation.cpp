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
          .bos = ng::data::bos_id,
          .eos = ng::data::eos_id,
          .length_penalty = ng::decoding::LengthPenalty::Average,
          .max_length_a = 2.0,
          .max_length_b = 10};
}

SourceBatch make_source_batch(const std::vector<std::vector<std::int32_t>>& sentences,
                              ng::Device device) {
  const auto rows = static_cast<std::int64_t>(sentences.size());
  std::int64_t width = 0;
  for (const auto& sentence : sentences)
    width = std::max<std::int64_t>(width, static_cast<std::int64_t>(sentence.size()) + 1);
  std::vector<std::int64_t> ids(rows * width, ng::data::pad_id), padding(rows * width, 1),
      lengths(rows);
  for (std::int64_t r = 0; r < rows; ++r) {
    const auto& sentence = sentences[r];
    std::copy(sentence.begin(), sentence.end(), ids.begin() + r * width);
    ids[r * width + static_cast<std::int64_t>(sentence.size())] = ng::data::eos_id;
    std::fill_n(padding.begin() + r * width, sentence.size() + 1, 0);
    lengths[r] = static_cast<std::int64_t>(sentence.size()) + 1;
  }
  SourceBatch batch{ng::from_vector(ids, {rows, width}), ng::from_vector(lengths, {rows}),
                    ng::from_vector(padding, {rows, width})};
  if (!device.is_cpu()) {
    batch.ids = batch.ids.to(device);
    batch.lengths = batch.lengths.to(device);
    batch.padding = batch.padding.to(device);
  }
  return batch;
}

std::vector<std::vector<Translation>> translate_n_best(
    RnnSearch& model, const ng::data::SubwordTokenizer& tokenizer,
    const std::vector<std::vector<std::int32_t>>& sentences,
    const ng::decoding::BeamSearchOptions& options, std::int64_t batch_sentences,
    ng::Device device) {
  std::vector<std::size_t> order;
  for (std::size_t i = 0; i < sentences.size(); ++i)
    if (!sentences[i].empty()) order.push_back(i);
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return sentences[a].size() < sentences[b].size();
  });
  // An empty sentence translates to one empty line.
  std::vector<std::vector<Translation>> translations(sentences.size(), std::vector<Translation>(1));
  for (std::size_t start = 0; start < order.size();
       start += static_cast<std::size_t>(batch_sentences)) {
    const std::size_t end =
        std::min(order.size(), start + static_cast<std::size_t>(batch_sentences));
    std::vector<std::vector<std::int32_t>> batch;
    for (std::size_t i = start; i < end; ++i) batch.push_back(sentences[order[i]]);
    const SourceBatch source = make_source_batch(batch, device);
    const auto results =
        translate_batch(model, source.ids, source.lengths, source.padding, options);
    for (std::size_t i = start; i < end; ++i) {
      auto& out = translations[order[i]];
      out.clear();
      for (const auto& hypothesis : results[i - start]) {
        const std::vector<std::int32_t> ids(hypothesis.tokens.begin(), hypothesis.tokens.end());
        out.push_back({tokenizer.decode(ids), hypothesis.score});
      }
    }
  }
  return translations;
}

std::vector<std::string> translate_sentences(
    RnnSearch& model, const ng::data::SubwordTokenizer& tokenizer,
    const std::vector<std::vector<std::int32_t>>& sentences,
    const ng::decoding::BeamSearchOptions& options, std::int64_t batch_sentences,
    ng::Device device) {
  std::vector<std::string> best;
  for (auto& n_best :
       translate_n_best(model, tokenizer, sentences, options, batch_sentences, device))
    best.push_back(std::move(n_best.front().text));
  return best;
}

}  // namespace gru_nmt
