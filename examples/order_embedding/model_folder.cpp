#include "model_folder.h"

namespace order_embedding {

using nlohmann::json;

json to_json(const RunConfig& config) { return examples::settings_to_json(config); }

RunConfig run_config_from_json(const json& stored) {
  RunConfig config = examples::settings_from_json<RunConfig>(stored, "order_embedding");
  parse_model_norm(config.model.norm);  // a bad spec is an Error here, not later
  return config;
}

void ModelFolder::write_config(const RunConfig& config) const {
  write_json("config.json", to_json(config));
}

RunConfig ModelFolder::read_config() const {
  return run_config_from_json(read_json("config.json"));
}

}  // namespace order_embedding
