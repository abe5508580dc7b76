#pragma once
// An attentive_reader model folder: everything `evaluate` needs, and everything `train` needs
// to resume.
//
//   config.json          the model, data and training settings
//   vocabulary.txt       the entity count and the words in id order
//   model.safetensors    the weights of the lowest validation error so far
//   state.safetensors    the training state after the last validation (model, Adam, dropout
//                        draws, steps, every validation's record)
//   train.csv            one row per validation: step, seconds, training and validation loss
//                        and error
// Every file is written atomically.

#include <nlohmann/json.hpp>
#include <string>

#include "common/run_folder.h"
#include "model.h"
#include "training.h"

namespace attentive_reader {

struct DataSettings {
  std::string folder{};  // holds questions/{training,validation,test}/*.question, as CNN's does
  std::int64_t training_questions = 0;    // the first N in name order; 0 for all
  std::int64_t validation_questions = 0;  // the same
};

struct RunConfig {
  ModelConfig model{};
  DataSettings data{};
  TrainSettings training{};
};

// Every setting of config.json, for examples::settings_to_json and settings_from_json.
template <class Config, class Visit>  // Config: RunConfig, or const RunConfig
void for_each_setting(Config& c, const Visit& visit) {
  visit("model", "norm", c.model.norm);
  visit("model", "vocabulary", c.model.vocabulary);
  visit("model", "dim", c.model.dim);
  visit("model", "dropout", c.model.dropout);
  visit("model", "answers", c.model.answers);
  visit("model", "seed", c.model.seed);
  visit("data", "folder", c.data.folder);
  visit("data", "training_questions", c.data.training_questions);
  visit("data", "validation_questions", c.data.validation_questions);
  examples::for_each_training_setting(c.training, visit);
}

inline nlohmann::json to_json(const RunConfig& config) {
  return examples::settings_to_json(config);
}
// The settings back; an Error naming the key that is missing or of the wrong type, or a norm
// the reader does not take.
inline RunConfig run_config_from_json(const nlohmann::json& json) {
  RunConfig config = examples::settings_from_json<RunConfig>(json, "attentive_reader");
  parse_model_norm(config.model.norm);
  return config;
}

class ModelFolder : public examples::RunFolder {
 public:
  explicit ModelFolder(std::string path) : RunFolder(std::move(path), "attentive_reader") {}
  void write_config(const RunConfig& config) const { write_json("config.json", to_json(config)); }
  RunConfig read_config() const { return run_config_from_json(read_json("config.json")); }
};

}  // namespace attentive_reader
