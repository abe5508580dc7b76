#pragma once
// Everything a gru_nmt run is configured by, its two presets, and its JSON form (the model
// folder's config.json).
//
//   cpu    (the default) embedding 128, hidden 256, vocabulary 8000, batch 80, Adam 5e-4:
//          learns visibly on 2 cores within minutes
//   small  embedding 64, hidden 128, vocabulary 4000, batch 80, Adam 1e-3, pairs up to 50
//          subwords: the experiment's default, a run of 600 steps in about a minute
//   paper  embedding 512, hidden 1024, vocabulary 32000, batch 80, Adam 1e-4, as the paper

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "model.h"

namespace gru_nmt {

struct TrainingSettings {
  std::string train_source, train_target;  // aligned text files
  std::string dev_source, dev_target;
  std::int64_t batch_sentences = 80;
  std::int64_t max_length = 80;  // subword tokens per side; longer training pairs are left out
  double learning_rate = 5e-4;
  double label_smoothing = 0.1;
  double clip_norm = 1.0;
  std::int64_t max_steps = 2000;
  double max_seconds = 0;  // wall-clock budget of this invocation; 0: none
  std::int64_t dev_loss_every = 200;
  std::int64_t dev_bleu_every = 1000;
  std::int64_t dev_beam = 1;   // 1: greedy search for dev BLEU
  std::int64_t patience = 10;  // dev BLEU evaluations without a new best before stopping; 0: never
  std::int64_t checkpoint_every = 500;
  std::int64_t keep_checkpoints = 2;
  std::uint64_t seed = 1;
};

struct Settings {
  ModelConfig model;
  TrainingSettings training;
};

// "cpu", "small" or "paper"; an Error for anything else.
Settings preset(const std::string& name);

// An Error naming the first value that cannot work (a zero budget, a batch of 0, ...).
void check(const Settings& settings);

nlohmann::json to_json(const Settings& settings);
Settings settings_from_json(const nlohmann::json& json, const std::string& origin);

// The settings as indented lines, for the start of a run.
std::string describe(const Settings& settings);

}  // namespace gru_nmt
