#pragma once
// The paper's Table 5: what the normalisers do to the decoder's recurrent pre-activations.
// For the decoder GRU's hidden-to-hidden mapping U h_{t-1} (before any norm), the mean and
// standard deviation over all its values at target positions 1 to 4 and over all positions,
// on a held-out set with teacher forcing. Without a norm they drift and spread with t; a norm
// keeps them in place.

#include <array>
#include <cstdint>

#include "text/parallel_dataset.h"
#include "model.h"

namespace gru_nmt {

struct PreactivationStatistics {
  std::array<double, 4> mean{}, deviation{};  // positions 1..4
  double mean_all = 0, deviation_all = 0;     // every real position
  std::array<std::int64_t, 4> values{};       // how many values each position had
};

PreactivationStatistics hidden_to_hidden_statistics(RnnSearch& model,
                                                    const normgrad::text::ParallelDataset& dataset,
                                                    std::int64_t batch_sentences,
                                                    normgrad::Device device);

}  // namespace gru_nmt
