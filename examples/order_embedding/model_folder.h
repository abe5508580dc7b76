#pragma once
// An order_embedding model folder: everything `evaluate` needs, and everything `train` needs
// to resume.
//
//   config.json          the model, data and training settings
//   vocabulary.txt       the caption words, one a line, in id order from id 2
//   model.safetensors    the weights of the best validation so far (image R@1 + R@5 + R@10)
//   state.safetensors    the training state after the last validation (model, Adam, steps,
//                        every validation's record)
//   train.csv            one row per validation: step, seconds, loss, dev retrieval both ways
// Every file is written atomically.

#include <nlohmann/json.hpp>
#include <string>

#include "common/run_folder.h"
#include "model.h"
#include "training.h"

namespace order_embedding {

struct DataSettings {
  std::string folder{};            // a data set in dataset.h's layout
  std::string features{};          // its feature set; "" for the only one
  std::int64_t train_images = 0;   // the first N training images; 0 for all
  std::int64_t dev_images = 1000;  // the first N dev images, validated as one fold
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
  visit("model", "word_dim", c.model.word_dim);
  visit("model", "dim", c.model.dim);
  visit("model", "image_dim", c.model.image_dim);
  visit("model", "seed", c.model.seed);
  visit("data", "folder", c.data.folder);
  visit("data", "features", c.data.features);
  visit("data", "train_images", c.data.train_images);
  visit("data", "dev_images", c.data.dev_images);
  visit("training", "margin", c.model.margin);
  examples::for_each_training_setting(c.training, visit);
}

inline nlohmann::json to_json(const RunConfig& config) {
  return examples::settings_to_json(config);
}
// The settings back; an Error naming the key that is missing or of the wrong type, or a norm
// the caption GRU does not take.
inline RunConfig run_config_from_json(const nlohmann::json& json) {
  RunConfig config = examples::settings_from_json<RunConfig>(json, "order_embedding");
  parse_model_norm(config.model.norm);
  return config;
}

class ModelFolder : public examples::RunFolder {
 public:
  explicit ModelFolder(std::string path) : RunFolder(std::move(path), "order_embedding") {}
  void write_config(const RunConfig& config) const { write_json("config.json", to_json(config)); }
  // An Error naming the file if it is missing or damaged.
  RunConfig read_config() const { return run_config_from_json(read_json("config.json")); }
};

}  // namespace order_embedding
