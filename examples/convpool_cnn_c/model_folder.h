#pragma once
// A convpool_cnn_c model folder: everything `evaluate` needs, and everything `train` needs to
// resume.
//
//   config.json              the model, data and training settings
//   whitening.safetensors    the ZCA whitening fitted on the training images
//   model.safetensors        the weights after the last epoch
//   state.safetensors        the training state (model, Adam, noise draws, epochs and records)
//   train.csv                one row per epoch: loss, train and test error, seconds, schedule
// Every file is written atomically.

#include <nlohmann/json.hpp>
#include <string>

#include "common/run_folder.h"
#include "data.h"
#include "model.h"
#include "training.h"

namespace convpool_cnn_c {

struct RunConfig {
  ModelConfig model{};
  DataSettings data{};
  TrainSettings training{};
};

nlohmann::json to_json(const RunConfig& config);
// The settings back; an Error naming the key that is missing or of the wrong type.
RunConfig run_config_from_json(const nlohmann::json& json);

class ModelFolder : public examples::RunFolder {
 public:
  explicit ModelFolder(std::string path) : RunFolder(std::move(path), "convpool_cnn_c") {}
  void write_config(const RunConfig& config) const;
  RunConfig read_config() const;  // an Error naming the file if it is missing or damaged
};

}  // namespace convpool_cnn_c
