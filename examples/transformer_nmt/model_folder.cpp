#include "model_folder.h"

#include <filesystem>

#include "nmt/checkpoint_average.h"

namespace transformer_nmt {

namespace ng = normgrad;

void ModelFolder::write_config(const Settings& settings,
                               const std::string& tokenizer_fingerprint) const {
  write_config_json(to_json(settings), tokenizer_fingerprint);
}

Settings ModelFolder::read_config(std::string* fingerprint) const {
  return settings_from_json(read_config_json(fingerprint), file("config.json"));
}

namespace {

// A name in the folder, or a path.
std::string weights_path(const ModelFolder& folder, const std::string& weights) {
  if (weights.empty()) return folder.weights_file();
  std::error_code ec;
  const std::string inside = folder.file(weights);
  const std::string path = std::filesystem::exists(inside, ec) ? inside : weights;
  NG_CHECK(std::filesystem::is_regular_file(path, ec), "transformer_nmt", "--weights ", weights,
           ": no such file in ", folder.path(), " or elsewhere");
  return path;
}

}  // namespace

LoadedModel load_model_folder(const ModelFolder& folder, ng::Generator& generator,
                              const std::string& weights_name) {
  NG_CHECK(folder.has_config(), "transformer_nmt", folder.path(),
           " is not a transformer_nmt model folder (no config.json)");
  std::string fingerprint;
  Settings settings = folder.read_config(&fingerprint);
  auto tokenizer = folder.load_tokenizer(fingerprint, settings.model.vocabulary_size);
  const std::string weights = weights_path(folder, weights_name);
  auto model = std::make_unique<TransformerNmt>(settings.model, generator);
  ng::io::Metadata metadata;
  const ng::nn::StateDict state = ng::io::load_tensors(weights, &metadata);
  tokenizer.check_checkpoint(metadata, weights);
  model->load_state_dict(state, /*strict=*/true);
  model->eval();
  return LoadedModel{std::move(settings), std::move(tokenizer), std::move(model), weights};
}

std::vector<std::int64_t> average_checkpoints(const ModelFolder& folder, std::int64_t last,
                                              const std::string& output) {
  NG_CHECK(folder.has_config(), "transformer_nmt average", folder.path(),
           " is not a transformer_nmt model folder (no config.json)");
  NG_CHECK(last >= 1, "transformer_nmt average", "--last must be at least 1, got ", last);
  std::string fingerprint;
  const Settings settings = folder.read_config(&fingerprint);
  const auto steps = folder.checkpoint_steps();
  NG_CHECK(static_cast<std::int64_t>(steps.size()) >= last, "transformer_nmt average",
           folder.path(), " holds ", steps.size(), " training states, fewer than --last ", last,
           " (train keeps --keep-checkpoints of them)");
  const std::vector<std::int64_t> chosen(steps.end() - last, steps.end());
  std::vector<std::string> paths;
  std::string names;
  for (const std::int64_t step : chosen) {
    paths.push_back(folder.checkpoint(step));
    names += (names.empty() ? "" : " ") + std::to_string(step);
  }
  const ng::nn::StateDict mean = nmt::average_model_weights(paths, "transformer_nmt average");
  // The mean must fit the folder's model before it is written.
  ng::Generator generator(0);
  TransformerNmt model(settings.model, generator);
  model.load_state_dict(mean, /*strict=*/true);
  ng::io::save(model, folder.file(output),
               {{ng::text::tokenizer_metadata_key, fingerprint}, {"averaged_steps", names}});
  return chosen;
}

}  // namespace transformer_nmt
