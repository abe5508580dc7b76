#include "scoring.h"

#include "translation.h"

namespace gru_nmt {

namespace ng = normgrad;

std::vector<PairScore> score_pairs(RnnSearch& model, const ng::data::SubwordTokenizer& tokenizer,
                                   const std::vector<std::string>& sources,
                                   const std::vector<std::string>& targets,
                                   std::int64_t batch_sentences, ng::Device device) {
  NG_CHECK(sources.size() == targets.size(), "gru_nmt score", "there are ", sources.size(),
           " sources but ", targets.size(), " targets");
  ng::NoGradGuard no_grad;
  model.eval();
  std::vector<PairScore> scores(sources.size());
  std::vector<std::size_t> pairs;
  for (std::size_t i = 0; i < sources.size(); ++i)
    if (!sources[i].empty() && !targets[i].empty()) pairs.push_back(i);
  for (std::size_t start = 0; start < pairs.size();
       start += static_cast<std::size_t>(batch_sentences)) {
    const std::size_t end =
        std::min(pairs.size(), start + static_cast<std::size_t>(batch_sentences));
    std::vector<std::vector<std::int32_t>> source_ids, target_ids;
    std::int64_t width = 0;
    for (std::size_t k = start; k < end; ++k) {
      source_ids.push_back(tokenizer.encode(sources[pairs[k]]));
      target_ids.push_back(tokenizer.encode(targets[pairs[k]]));
      width =
          std::max<std::int64_t>(width, static_cast<std::int64_t>(target_ids.back().size()) + 1);
    }
    const auto rows = static_cast<std::int64_t>(end - start);
    std::vector<std::int64_t> input(rows * width, ng::data::pad_id),
        output(rows * width, ng::data::pad_id);
    for (std::int64_t r = 0; r < rows; ++r) {
      const auto& y = target_ids[r];
      input[r * width] = ng::data::bos_id;
      std::copy(y.begin(), y.end(), input.begin() + r * width + 1);
      std::copy(y.begin(), y.end(), output.begin() + r * width);
      output[r * width + static_cast<std::int64_t>(y.size())] = ng::data::eos_id;
    }
    const SourceBatch source = make_source_batch(source_ids, device);
    ng::Tensor target_input = ng::from_vector(input, {rows, width});
    if (!device.is_cpu()) target_input = target_input.to(device);
    const ng::Tensor log_probs = ng::log_softmax(
        model.forward(model.encode(source.ids, source.lengths, source.padding), target_input), -1);
    const auto values = log_probs.to(ng::DType::Float64).to_vector<double>();
    const std::int64_t V = log_probs.size(2);
    for (std::int64_t r = 0; r < rows; ++r) {
      PairScore& score = scores[pairs[start + static_cast<std::size_t>(r)]];
      const auto length = static_cast<std::int64_t>(target_ids[r].size()) + 1;
      for (std::int64_t t = 0; t < length; ++t)
        score.log_probability += values[(r * width + t) * V + output[r * width + t]];
      score.tokens = length;
    }
  }
  return scores;
}

}  // namespace gru_nmt
