#include "model_folder.h"

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
    examples::read_setting(j, section, key, into, "order_embedding");
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

void ModelFolder::write_config(const RunConfig& config) const {
  write_json("config.json", to_json(config));
}

RunConfig ModelFolder::read_config() const {
  return run_config_from_json(read_json("config.json"));
}

}  // namespace order_embedding
