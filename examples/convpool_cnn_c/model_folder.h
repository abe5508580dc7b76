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

// config.json names the dataset as --dataset does; another name is parse_dataset's Error.
inline void to_json(nlohmann::json& json, DatasetKind kind) { json = dataset_name(kind); }
inline void from_json(const nlohmann::json& json, DatasetKind& kind) {
  kind = parse_dataset(json.get<std::string>());
}

// Every setting of config.json, for examples::settings_to_json and settings_from_json.
template <class Config, class Visit>  // Config: RunConfig, or const RunConfig
void for_each_setting(Config& c, const Visit& visit) {
  visit("model", "norm", c.model.norm);
  visit("model", "input_channels", c.model.input_channels);
  visit("model", "width", c.model.width);
  visit("model", "input_noise", c.model.input_noise);
  visit("model", "dropout", c.model.dropout);
  visit("model", "seed", c.model.seed);
  visit("model", "precision", c.model.precision);
  visit("data", "dataset", c.data.kind);
  visit("data", "folder", c.data.folder);
  visit("data", "train_size", c.data.train_size);
  visit("data", "test_size", c.data.test_size);
  visit("data", "zca_regularization", c.data.zca_regularization);
  visit("training", "epochs", c.training.epochs);
  visit("training", "batch_size", c.training.batch_size);
  visit("training", "learning_rate", c.training.learning_rate);
  visit("training", "init_images", c.training.init_images);
  visit("training", "seed", c.training.seed);
}

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
