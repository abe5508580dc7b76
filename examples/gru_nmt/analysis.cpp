#include "analysis.h"

#include <cmath>

#include "text/translation_batches.h"

namespace gru_nmt {

namespace ng = normgrad;

namespace {

// Running sums of values and their squares (in double: millions of values).
struct Moments {
  double sum = 0, squares = 0;
  std::int64_t count = 0;
  void add(double v) {
    sum += v;
    squares += v * v;
    ++count;
  }
  double mean() const { return count == 0 ? 0.0 : sum / static_cast<double>(count); }
  double deviation() const {
    if (count == 0) return 0.0;
    const double m = mean();
    return std::sqrt(std::max(0.0, squares / static_cast<double>(count) - m * m));
  }
};

}  // namespace

PreactivationStatistics hidden_to_hidden_statistics(RnnSearch& model,
                                                    const ng::text::ParallelDataset& dataset,
                                                    std::int64_t batch_sentences,
                                                    ng::Device device) {
  ng::NoGradGuard no_grad;
  const bool was_training = model.is_training();
  model.eval();
  std::array<Moments, 4> at;
  Moments all;
  ng::text::TranslationBatches batches(
      dataset, {.max_sentences = batch_sentences, .shuffle = false}, device);
  for (const auto& pairs : batches.epoch_plan(0)) {
    const auto batch = batches.make_batch(pairs);
    ng::Tensor states;
    model.forward(model.encode(batch.source, batch.source_lengths, batch.source_padding),
                  batch.target_input, &states);
    const ng::Tensor projected = model.decoder_state_projection(states);  // [B, T, 3H]
    const auto values = projected.to(ng::DType::Float64).to_vector<double>();
    const auto lengths = batch.target_lengths.to(ng::Device::cpu()).to_vector<std::int64_t>();
    const std::int64_t T = projected.size(1), width = projected.size(2);
    for (std::size_t b = 0; b < lengths.size(); ++b) {
      for (std::int64_t t = 0; t < lengths[b]; ++t) {
        const double* row = values.data() + (static_cast<std::int64_t>(b) * T + t) * width;
        for (std::int64_t k = 0; k < width; ++k) {
          all.add(row[k]);
          if (t < 4) at[static_cast<std::size_t>(t)].add(row[k]);
        }
      }
    }
  }
  if (was_training) model.train();
  PreactivationStatistics statistics;
  for (std::size_t t = 0; t < 4; ++t) {
    statistics.mean[t] = at[t].mean();
    statistics.deviation[t] = at[t].deviation();
    statistics.values[t] = at[t].count;
  }
  statistics.mean_all = all.mean();
  statistics.deviation_all = all.deviation();
  return statistics;
}

}  // namespace gru_nmt
