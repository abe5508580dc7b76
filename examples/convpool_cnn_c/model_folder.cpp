#include "model_folder.h"

#include "common/precision.h"

namespace convpool_cnn_c {

namespace ng = normgrad;
using nlohmann::json;

json to_json(const RunConfig& config) { return examples::settings_to_json(config); }

RunConfig run_config_from_json(const json& stored) {
  json with_precision = stored;
  const auto model = with_precision.find("model");
  if (model != with_precision.end() && model->is_object() && !model->contains("precision"))
    (*model)["precision"] = "float32";  // a folder written before it was kept trains in float32
  RunConfig config = examples::settings_from_json<RunConfig>(with_precision, "convpool_cnn_c");
  parse_model_norm(config.model.norm);  // a bad spec or precision is an Error here, not later
  examples::activation_dtype(config.model.precision, ng::DType::Float32, "convpool_cnn_c");
  return config;
}

void ModelFolder::write_config(const RunConfig& config) const {
  write_json("config.json", to_json(config));
}

RunConfig ModelFolder::read_config() const {
  return run_config_from_json(read_json("config.json"));
}

}  // namespace convpool_cnn_c
