#pragma once
// `attentive_reader time`: the paper's Table 6 in shape, seconds per 100 training steps of
// each normaliser at the paper's sizes (batch 64, 240 units, a vocabulary of 65829 words as the
// recurrent-BatchNorm paper gives for this data, 527 entity ids), on questions of the real
// data's shape. The "top4" data keeps 4 sentences of each story, and its lengths are not
// published: the documents here are 60 to 140 tokens (mean 100, 4 sentences of 25) and the
// queries 8 to 17 (mean 12.5), a seventh of a document's tokens being entities. The norms take
// turns in rounds (examples/common/norm_timing.h).

#include <normgrad/normgrad.h>

#include <cstdint>
#include <string>
#include <vector>

#include "common/norm_timing.h"

namespace attentive_reader {

struct TimingSettings {
  std::vector<std::string> norms = {"none", "batchnorm", "layernorm", "rmsnorm", "prmsnorm:0.0625"};
  std::int64_t batch = 64, dim = 240, vocabulary = 65829, entities = 527;
  std::int64_t min_document = 60, max_document = 140, min_query = 8, max_query = 17;
  examples::Rounds rounds{.steps = 5, .rounds = 2, .warmup = 1};
  std::uint64_t seed = 1;

  std::string sizes() const;  // "batch 64, 240 units, 65829 words"
};

std::vector<examples::NormTiming> time_norms(const TimingSettings& settings,
                                             normgrad::Device device,
                                             std::FILE* progress = nullptr);

// The paper's Table 6: seconds per 100 steps by canonical norm spec.
const std::map<std::string, double>& paper_table6();

}  // namespace attentive_reader
