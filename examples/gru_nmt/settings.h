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
#include <string>

#include "model.h"
#include "nmt/training_settings.h"

namespace gru_nmt {

// gru_nmt's training settings: the shared ones (nmt/training_settings.h, whose defaults are
// these) and the batch.
struct TrainingSettings : nmt::TrainingSettings {
  std::int64_t batch_sentences = 80;
};

struct Settings {
  ModelConfig model;
  TrainingSettings training;
};

// config.json's settings, each named once (nmt/training_settings.h): the model's, then the
// training's. Folders written before dropout and mixed precision existed lack those settings.
template <class S, class Visit> void for_each_setting(S& s, Visit&& visit) {
  auto& m = s.model;
  visit("model", "vocabulary_size", m.vocabulary_size);
  visit("model", "embedding_size", m.embedding_size);
  visit("model", "hidden_size", m.hidden_size);
  visit("model", "norm", m.norm);
  visit("model", "tie_target_embeddings", m.tie_target_embeddings);
  visit("model", "init_center", m.init_center);
  visit("model", "dropout_embedding", m.dropout_embedding, nmt::added_later);
  visit("model", "dropout_hidden", m.dropout_hidden, nmt::added_later);
  visit("model", "precision", m.precision, nmt::added_later);
  visit("training", "batch_sentences", s.training.batch_sentences);
  nmt::for_each_shared_setting(
      s.training, [&](const char* key, auto& value) { visit("training", key, value); });
}

// "cpu", "small" or "paper"; an Error for anything else.
Settings preset(const std::string& name);

// An Error naming the first value that cannot work (a zero budget, a batch of 0, ...).
void check(const Settings& settings);

}  // namespace gru_nmt
