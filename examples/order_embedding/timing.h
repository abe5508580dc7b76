#pragma once
// `order_embedding time`: the paper's Table 8 in shape, seconds per 100 training steps of each
// normaliser at the paper's sizes (batch 128, words 300, GRU 1024, images 4096, a vocabulary of
// 10000), on inputs of the real data's shapes: captions of 7 to 14 words (mean 10.5, about
// COCO's mean caption length) plus the end token, image vectors of unit length.
//
// The norms take turns in rounds (each round times `steps` steps of every norm after `warmup`
// untimed ones), so that a slow spell of a shared machine falls on all of them; a norm's figure
// is the median step time over all its rounds, times 100.

#include <normgrad/normgrad.h>

#include <cstdint>
#include <string>
#include <vector>

namespace order_embedding {

struct TimingSettings {
  std::vector<std::string> norms = {"none", "layernorm", "rmsnorm", "prmsnorm:0.0625"};
  std::int64_t batch = 128, word_dim = 300, dim = 1024, image_dim = 4096, vocabulary = 10000;
  std::int64_t steps = 10, rounds = 2, warmup = 2;
  std::uint64_t seed = 1;
};

struct NormTiming {
  std::string norm;
  std::vector<double> step_seconds;      // every timed step, in order
  double seconds_per_100_steps() const;  // the median step, times 100
  double spread() const;                 // (slowest - fastest) / median of the steps
};

// Times every norm; `progress`, when given, hears each norm's round as it ends.
std::vector<NormTiming> time_norms(const TimingSettings& settings, normgrad::Device device,
                                   std::FILE* progress = nullptr);

// The table beside the paper's Table 8 (s per 100 steps, and the saving over LayerNorm).
std::string timing_markdown(const std::vector<NormTiming>& timings);
std::string timing_csv(const std::vector<NormTiming>& timings);

}  // namespace order_embedding
