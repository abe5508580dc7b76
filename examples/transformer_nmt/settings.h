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
#include <string>

#include "model.h"
#include "nmt/training_settings.h"

namespace transformer_nmt {

// transformer_nmt's training settings: the shared ones (nmt/training_settings.h), with their
// defaults here where they are not gru_nmt's, and the batch and the schedule.
struct TrainingSettings : nmt::TrainingSettings {
  // Tokens of a batch: its rows times its longest side (+1 for bos or eos), as
  // text::BatchingOptions::max_tokens counts them.
  std::int64_t batch_tokens = 2000;
  // The inverse-square-root schedule: linear warm-up to learning_rate over warmup_steps, then
  // learning_rate * sqrt(warmup_steps / step). With learning_rate = d^-0.5 warmup^-0.5 it is
  // Vaswani et al.'s d^-0.5 min(step^-0.5, step warmup^-1.5).
  std::int64_t warmup_steps = 800;
  double adam_beta2 = 0.98;

  TrainingSettings() {
    max_length = 100;
    learning_rate = 1e-3;
    clip_norm = 0;         // the paper clips none
    patience = 0;          // never stop early
    keep_checkpoints = 5;  // enough for `average --last 5`
  }
};

struct Settings {
  ModelConfig model;
  TrainingSettings training;
};

// config.json's settings, each named once (nmt/training_settings.h): the model's, then the
// training's. Folders written before mixed precision existed lack its setting.
template <class S, class Visit> void for_each_setting(S& s, Visit&& visit) {
  auto& m = s.model;
  visit("model", "vocabulary_size", m.vocabulary_size);
  visit("model", "model_size", m.model_size);
  visit("model", "feed_forward_size", m.feed_forward_size);
  visit("model", "heads", m.heads);
  visit("model", "encoder_layers", m.encoder_layers);
  visit("model", "decoder_layers", m.decoder_layers);
  visit("model", "dropout", m.dropout);
  visit("model", "norm", m.norm);
  visit("model", "pre_norm", m.pre_norm);
  visit("model", "tie_embeddings", m.tie_embeddings);
  visit("model", "precision", m.precision, nmt::added_later);
  auto& t = s.training;
  visit("training", "batch_tokens", t.batch_tokens);
  visit("training", "warmup_steps", t.warmup_steps);
  visit("training", "adam_beta2", t.adam_beta2);
  nmt::for_each_shared_setting(
      t, [&](const char* key, auto& value) { visit("training", key, value); });
}

// "cpu", "small" or "base"; an Error for anything else.
Settings preset(const std::string& name);

// An Error naming the first value that cannot work (the model's check, a zero budget, ...).
void check(const Settings& settings);

}  // namespace transformer_nmt
