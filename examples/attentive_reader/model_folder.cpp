#include "model_folder.h"

namespace attentive_reader {

using nlohmann::json;

json to_json(const RunConfig& c) {
  return {{"model",
           {{"norm", c.model.norm},
            {"vocabulary", c.model.vocabulary},
            {"dim", c.model.dim},
            {"dropout", c.model.dropout},
            {"answers", c.model.answers},
            {"seed", c.model.seed}}},
          {"data",
           {{"folder", c.data.folder},
            {"training_questions", c.data.training_questions},
            {"validation_questions", c.data.validation_questions}}},
          {"training",
           {{"steps", c.training.steps},
            {"batch_size", c.training.batch_size},
            {"learning_rate", c.training.learning_rate},
            {"clip", c.training.clip},
            {"valid_every", c.training.valid_every},
            {"seed", c.training.seed}}}};
}

RunConfig run_config_from_json(const json& j) {
  const auto get = [&](const char* section, const char* key, auto& into) {
    examples::read_setting(j, section, key, into, "attentive_reader");
  };
  RunConfig c;
  get("model", "norm", c.model.norm);
  get("model", "vocabulary", c.model.vocabulary);
  get("model", "dim", c.model.dim);
  get("model", "dropout", c.model.dropout);
  get("model", "answers", c.model.answers);
  get("model", "seed", c.model.seed);
  get("data", "folder", c.data.folder);
  get("data", "training_questions", c.data.training_questions);
  get("data", "validation_questions", c.data.validation_questions);
  get("training", "steps", c.training.steps);
  get("training", "batch_size", c.training.batch_size);
  get("training", "learning_rate", c.training.learning_rate);
  get("training", "clip", c.training.clip);
  get("training", "valid_every", c.training.valid_every);
  get("training", "seed", c.training.seed);
  parse_model_norm(c.model.norm);
  return c;
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
