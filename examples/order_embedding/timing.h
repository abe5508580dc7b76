#pragma once
// `order_embedding time`: the paper's Table 8 in shape, seconds per 100 training steps of each
// normaliser at the paper's sizes (batch 128, words 300, GRU 1024, images 4096, a vocabulary of
// 10000), on inputs of the real data's shapes: captions of 7 to 14 words (mean 10.5, about
// COCO's mean caption length) plus the end token, image vectors of unit length.
//
// The norms take turns in rounds (examples/common/norm_timing.h).

#include <normgrad/normgrad.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "common/norm_timing.h"

namespace order_embedding {

struct TimingSettings {
  std::vector<std::string> norms = {"none", "layernorm", "rmsnorm", "prmsnorm:0.0625"};
  std::int64_t batch = 128, word_dim = 300, dim = 1024, image_dim = 4096, vocabulary = 10000;
  examples::Rounds rounds{.steps = 10, .rounds = 2, .warmup = 2};
  std::uint64_t seed = 1;

  std::string sizes() const;  // "batch 128, words 300, GRU 1024, images 4096"
};

// Times every norm; `progress`, when given, hears each norm's round as it ends.
std::vector<examples::NormTiming> time_norms(const TimingSettings& settings,
                                             normgrad::Device device,
                                             std::FILE* progress = nullptr);

// The paper's Table 8: seconds per 100 steps by canonical norm spec.
const std::map<std::string, double>& paper_table8();

}  // namespace order_embedding
