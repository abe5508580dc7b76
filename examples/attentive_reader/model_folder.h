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
  std::string folder;  // holds questions/{training,validation,test}/*.question, as CNN's does
  std::int64_t training_questions = 0;    // the first N in name order; 0 for all
  std::int64_t validation_questions = 0;  // the same
};

struct RunConfig {
  ModelConfig model{};
  DataSettings data{};
  TrainSettings training{};
};

nlohmann::json to_json(const RunConfig& config);
RunConfig run_config_from_json(const nlohmann::json& json);

// The questions of a split ("training", "validation" or "test") of a data folder.
std::vector<Question> load_questions(const std::string& folder, const std::string& split,
                                     std::int64_t max_questions = 0);

class ModelFolder : public examples::RunFolder {
 public:
  explicit ModelFolder(std::string path) : RunFolder(std::move(path), "attentive_reader") {}
  void write_config(const RunConfig& config) const;
  RunConfig read_config() const;
};

}  // namespace attentive_reader
