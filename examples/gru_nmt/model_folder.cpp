#include "model_folder.h"

namespace gru_nmt {

namespace ng = normgrad;

void ModelFolder::write_config(const Settings& settings,
                               const std::string& tokenizer_fingerprint) const {
  write_config_json(to_json(settings), tokenizer_fingerprint);
}

Settings ModelFolder::read_config(std::string* fingerprint) const {
  return settings_from_json(read_config_json(fingerprint), file("config.json"));
}

LoadedModel load_model_folder(const ModelFolder& folder, ng::Generator& generator) {
  NG_CHECK(folder.has_config(), "gru_nmt", folder.path(),
           " is not a gru_nmt model folder (no config.json)");
  std::string fingerprint;
  Settings settings = folder.read_config(&fingerprint);
  auto tokenizer = folder.load_tokenizer(fingerprint, settings.model.vocabulary_size);
  const std::string weights = folder.weights_file();
  auto model = std::make_unique<RnnSearch>(settings.model, generator);
  ng::io::Metadata metadata;
  const ng::nn::StateDict state = ng::io::load_tensors(weights, &metadata);
  tokenizer.check_checkpoint(metadata, weights);
  model->load_state_dict(state, /*strict=*/true);
  return LoadedModel{std::move(settings), std::move(tokenizer), std::move(model), weights};
}

}  // namespace gru_nmt
