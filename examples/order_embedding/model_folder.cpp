#include "model_folder.h"

#include <filesystem>
#include <fstream>

#include "common/text_file.h"

namespace order_embedding {

using nlohmann::json;

json to_json(const RunConfig& c) {
  return {{"model",
           {{"norm", c.model.norm},
            {"vocabulary", c.model.vocabulary},
            {"word_dim", c.model.word_dim},
            {"dim", c.model.dim},
            {"image_dim", c.model.image_dim},
            {"seed", c.model.seed}}},
          {"data",
           {{"folder", c.data.folder},
            {"features", c.data.features},
            {"train_images", c.data.train_images},
            {"dev_images", c.data.dev_images}}},
          {"training",
           {{"steps", c.training.steps},
            {"batch_size", c.training.batch_size},
            {"learning_rate", c.training.learning_rate},
            {"clip", c.training.clip},
            {"margin", c.training.margin},
            {"valid_every", c.training.valid_every},
            {"seed", c.training.seed}}}};
}

RunConfig run_config_from_json(const json& j) {
  const auto get = [&](const char* section, const char* key, auto& into) {
    NG_CHECK(
        j.is_object() && j.contains(section) && j[section].is_object() && j[section].contains(key),
        "order_embedding", "config.json has no ", section, ".", key);
    try {
      j[section][key].get_to(into);
    } catch (const json::exception&) {
      NG_CHECK(false, "order_embedding", "config.json: ", section, ".", key,
               " has the wrong type: ", j[section][key].dump());
    }
  };
  RunConfig c;
  get("model", "norm", c.model.norm);
  get("model", "vocabulary", c.model.vocabulary);
  get("model", "word_dim", c.model.word_dim);
  get("model", "dim", c.model.dim);
  get("model", "image_dim", c.model.image_dim);
  get("model", "seed", c.model.seed);
  get("data", "folder", c.data.folder);
  get("data", "features", c.data.features);
  get("data", "train_images", c.data.train_images);
  get("data", "dev_images", c.data.dev_images);
  get("training", "steps", c.training.steps);
  get("training", "batch_size", c.training.batch_size);
  get("training", "learning_rate", c.training.learning_rate);
  get("training", "clip", c.training.clip);
  get("training", "margin", c.training.margin);
  get("training", "valid_every", c.training.valid_every);
  get("training", "seed", c.training.seed);
  parse_model_norm(c.model.norm);  // a bad spec is an Error here, not later
  return c;
}

bool ModelFolder::has_config() const { return std::filesystem::exists(file("config.json")); }

void ModelFolder::write_text(const std::string& name, const std::string& text) const {
  examples::write_text_file(file(name), text, "order_embedding");
}

void ModelFolder::write_config(const RunConfig& config) const {
  write_text("config.json", to_json(config).dump(2) + "\n");
}

RunConfig ModelFolder::read_config() const {
  const std::string path = file("config.json");
  std::ifstream in(path);
  NG_CHECK(in.good(), "order_embedding", "'", path_,
           "' is not an order_embedding model folder: no config.json");
  json parsed;
  try {
    parsed = json::parse(in);
  } catch (const json::exception& error) {
    NG_CHECK(false, "order_embedding", "'", path, "' is not JSON: ", error.what());
  }
  return run_config_from_json(parsed);
}

}  // namespace order_embedding
