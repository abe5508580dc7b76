#pragma once
// Everything a transformer_nmt run is configured by, its presets, and its JSON form (the model
// folder's config.json).
//
//   cpu    (the default) d 256, feed-forward 1024, 4 heads, 3 + 3 layers, vocabulary 8000,
//          batches of 2000 tokens, peak learning rate 1e-3 after 800 warm-up steps: learns
//          visibly on 2 cores within minutes
//   small  d 128, feed-forward 512, 4 heads, 2 + 2 layers, vocabulary 4000, batches of 1500
//          tokens, pairs up to 50 subwords: the experiment's default
//   base   d 512, feed-forward 2048, 8 heads, 6 + 6 layers, vocabulary 32000, batches of 25000
//          tokens, warm-up 4000 steps, 300k steps: the paper's (Vaswani et al.'s "base")

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "model.h"

namespace transformer_nmt {

struct TrainingSettings {
  std::string train_source, train_target;  // aligned text files
  std::string dev_source, dev_target;
  // Tokens of a batch: its rows times its longest side (+1 for bos or eos), as
  // text::BatchingOptions::max_tokens counts them.
  std::int64_t batch_tokens = 2000;
  std::int64_t max_length = 100;  // subword tokens per side; longer training pairs are left out
  // The inverse-square-root schedule: linear warm-up to learning_rate over warmup_steps, then
  // learning_rate * sqrt(warmup_steps / step). With learning_rate = d^-0.5 warmup^-0.5 it is
  // Vaswani et al.'s d^-0.5 min(step^-0.5, step warmup^-1.5).
  double learning_rate = 1e-3;
  std::int64_t warmup_steps = 800;
  double adam_beta2 = 0.98;
  double label_smoothing = 0.1;
  double clip_norm = 0;  // 0: no clipping (the paper clips none)
  std::int64_t max_steps = 2000;
  double max_seconds = 0;  // wall-clock budget of this invocation; 0: none
  std::int64_t dev_loss_every = 200;
  std::int64_t dev_bleu_every = 1000;
  std::int64_t dev_beam = 1;  // 1: greedy search for dev BLEU
  std::int64_t patience = 0;  // dev BLEU evaluations without a new best before stopping; 0: never
  std::int64_t checkpoint_every = 500;
  std::int64_t keep_checkpoints = 5;  // enough for `average --last 5`
  std::uint64_t seed = 1;
};

struct Settings {
  ModelConfig model;
  TrainingSettings training;
};

// "cpu", "small" or "base"; an Error for anything else.
Settings preset(const std::string& name);

// An Error naming the first value that cannot work (the model's check, a zero budget, ...).
void check(const Settings& settings);

nlohmann::json to_json(const Settings& settings);
Settings settings_from_json(const nlohmann::json& json, const std::string& origin);

// The settings as indented lines, for the start of a run.
std::string describe(const Settings& settings);

}  // namespace transformer_nmt
