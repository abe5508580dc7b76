#include "sentence_batches.h"

#include <algorithm>

namespace nmt {

namespace ng = normgrad;

namespace {

ng::Tensor on_device(ng::Tensor x, ng::Device device) { return device.is_cpu() ? x : x.to(device); }

}  // namespace

SourceBatch make_source_batch(const std::vector<std::vector<std::int32_t>>& sentences,
                              ng::Device device) {
  const auto rows = static_cast<std::int64_t>(sentences.size());
  std::int64_t width = 0;
  for (const auto& sentence : sentences)
    width = std::max<std::int64_t>(width, static_cast<std::int64_t>(sentence.size()) + 1);
  std::vector<std::int64_t> ids(rows * width, ng::text::pad_id), padding(rows * width, 1),
      lengths(rows);
  for (std::int64_t r = 0; r < rows; ++r) {
    const auto& sentence = sentences[r];
    std::copy(sentence.begin(), sentence.end(), ids.begin() + r * width);
    ids[r * width + static_cast<std::int64_t>(sentence.size())] = ng::text::eos_id;
    std::fill_n(padding.begin() + r * width, sentence.size() + 1, 0);
    lengths[r] = static_cast<std::int64_t>(sentence.size()) + 1;
  }
  return {on_device(ng::from_vector(ids, {rows, width}), device),
          on_device(ng::from_vector(lengths, {rows}), device),
          on_device(ng::from_vector(padding, {rows, width}), device)};
}

TargetBatch make_target_batch(const std::vector<std::vector<std::int32_t>>& sentences,
                              ng::Device device) {
  const auto rows = static_cast<std::int64_t>(sentences.size());
  TargetBatch batch;
  for (const auto& sentence : sentences)
    batch.width =
        std::max<std::int64_t>(batch.width, static_cast<std::int64_t>(sentence.size()) + 1);
  const std::int64_t width = batch.width;
  std::vector<std::int64_t> input(rows * width, ng::text::pad_id), padding(rows * width, 1);
  batch.output_ids.assign(rows * width, ng::text::pad_id);
  for (std::int64_t r = 0; r < rows; ++r) {
    const auto& y = sentences[r];
    const auto length = static_cast<std::int64_t>(y.size());
    input[r * width] = ng::text::bos_id;
    std::copy(y.begin(), y.end(), input.begin() + r * width + 1);
    std::copy(y.begin(), y.end(), batch.output_ids.begin() + r * width);
    batch.output_ids[r * width + length] = ng::text::eos_id;
    std::fill_n(padding.begin() + r * width, length + 1, 0);
  }
  batch.input = on_device(ng::from_vector(input, {rows, width}), device);
  batch.output = on_device(ng::from_vector(batch.output_ids, {rows, width}), device);
  batch.padding = on_device(ng::from_vector(padding, {rows, width}), device);
  return batch;
}

std::vector<std::vector<Translation>> translate_n_best(
    const BatchTranslator& translator, const ng::text::SubwordTokenizer& tokenizer,
    const std::vector<std::vector<std::int32_t>>& sentences, std::int64_t batch_sentences,
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
    const auto results = translator(make_source_batch(batch, device));
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

std::vector<std::string> best_translations(std::vector<std::vector<Translation>> n_best) {
  std::vector<std::string> best;
  best.reserve(n_best.size());
  for (auto& list : n_best) best.push_back(std::move(list.front().text));
  return best;
}

std::vector<PairScore> score_pairs(const TeacherForcedLogProbs& model,
                                   const ng::text::SubwordTokenizer& tokenizer,
                                   const std::vector<std::string>& sources,
                                   const std::vector<std::string>& targets,
                                   std::int64_t batch_sentences, ng::Device device,
                                   const std::string& program) {
  NG_CHECK(sources.size() == targets.size(), program, "there are ", sources.size(), " sources but ",
           targets.size(), " targets");
  ng::NoGradGuard no_grad;
  std::vector<PairScore> scores(sources.size());
  std::vector<std::size_t> pairs;
  for (std::size_t i = 0; i < sources.size(); ++i)
    if (!sources[i].empty() && !targets[i].empty()) pairs.push_back(i);
  for (std::size_t start = 0; start < pairs.size();
       start += static_cast<std::size_t>(batch_sentences)) {
    const std::size_t end =
        std::min(pairs.size(), start + static_cast<std::size_t>(batch_sentences));
    std::vector<std::vector<std::int32_t>> source_ids, target_ids;
    for (std::size_t k = start; k < end; ++k) {
      source_ids.push_back(tokenizer.encode(sources[pairs[k]]));
      target_ids.push_back(tokenizer.encode(targets[pairs[k]]));
    }
    const TargetBatch target = make_target_batch(target_ids, device);
    const ng::Tensor log_probs = model(make_source_batch(source_ids, device), target);
    const auto values = log_probs.to(ng::DType::Float64).to_vector<double>();
    const std::int64_t V = log_probs.size(2), width = target.width;
    for (std::size_t r = 0; r < target_ids.size(); ++r) {
      PairScore& score = scores[pairs[start + r]];
      const auto row = static_cast<std::int64_t>(r);
      score.tokens = static_cast<std::int64_t>(target_ids[r].size()) + 1;
      for (std::int64_t t = 0; t < score.tokens; ++t)
        score.log_probability += values[(row * width + t) * V + target.output_ids[row * width + t]];
    }
  }
  return scores;
}

}  // namespace nmt
