#include "model_folder.h"

namespace attentive_reader {

using nlohmann::json;

json to_json(const RunConfig& config) { return examples::settings_to_json(config); }

RunConfig run_config_from_json(const json& stored) {
  RunConfig config = examples::settings_from_json<RunConfig>(stored, "attentive_reader");
  parse_model_norm(config.model.norm);
  return config;
}

std::vector<Question> load_questions(const std::string& folder, const std::string& split,
                                     std::int64_t max_questions) {
  return read_question_folder(folder + "/questions/" + split, max_questions);
}

void ModelFolder::write_config(const RunConfig& config) const {
  write_json("config.json", to_json(config));
}

RunConfig ModelFolder::read_config() const {
  return run_config_from_json(read_json("config.json"));
}

}  // namespace attentive_reader
