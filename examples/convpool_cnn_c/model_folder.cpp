#include "model_folder.h"

#include "common/precision.h"

namespace convpool_cnn_c {

namespace ng = normgrad;
using nlohmann::json;

nlohmann::json to_json(const RunConfig& c) {
  return {{"model",
           {{"norm", c.model.norm},
            {"input_channels", c.model.input_channels},
            {"width", c.model.width},
            {"input_noise", c.model.input_noise},
            {"dropout", c.model.dropout},
            {"seed", c.model.seed},
            {"precision", c.model.precision}}},
          {"data",
           {{"dataset", dataset_name(c.data.kind)},
            {"folder", c.data.folder},
            {"train_size", c.data.train_size},
            {"test_size", c.data.test_size},
            {"zca_regularization", c.data.zca_regularization}}},
          {"training",
           {{"epochs", c.training.epochs},
            {"batch_size", c.training.batch_size},
            {"learning_rate", c.training.learning_rate},
            {"init_images", c.training.init_images},
            {"seed", c.training.seed}}}};
}

RunConfig run_config_from_json(const nlohmann::json& j) {
  const auto get = [&](const char* section, const char* key, auto& into) {
    examples::read_setting(j, section, key, into, "convpool_cnn_c");
  };
  RunConfig c;
  get("model", "norm", c.model.norm);
  get("model", "input_channels", c.model.input_channels);
  get("model", "width", c.model.width);
  get("model", "input_noise", c.model.input_noise);
  get("model", "dropout", c.model.dropout);
  get("model", "seed", c.model.seed);
  if (j.at("model").contains("precision"))  // folders written before it existed: float32
    get("model", "precision", c.model.precision);
  std::string dataset;
  get("data", "dataset", dataset);
  c.data.kind = parse_dataset(dataset);
  get("data", "folder", c.data.folder);
  get("data", "train_size", c.data.train_size);
  get("data", "test_size", c.data.test_size);
  get("data", "zca_regularization", c.data.zca_regularization);
  get("training", "epochs", c.training.epochs);
  get("training", "batch_size", c.training.batch_size);
  get("training", "learning_rate", c.training.learning_rate);
  get("training", "init_images", c.training.init_images);
  get("training", "seed", c.training.seed);
  parse_model_norm(c.model.norm);  // a bad spec or precision is an Error here, not later
  examples::activation_dtype(c.model.precision, ng::DType::Float32, "convpool_cnn_c");
  return c;
}

void ModelFolder::write_config(const RunConfig& config) const {
  write_json("config.json", to_json(config));
}

RunConfig ModelFolder::read_config() const {
  return run_config_from_json(read_json("config.json"));
}

}  // namespace convpool_cnn_c
