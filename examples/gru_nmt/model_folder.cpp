#include "model_folder.h"

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "data/text_file.h"
#include "nn/atomic_file.h"

namespace gru_nmt {

namespace ng = normgrad;
namespace fs = std::filesystem;

namespace {
const std::string checkpoint_prefix = "checkpoint-";
const std::string checkpoint_suffix = ".safetensors";
}  // namespace

std::string ModelFolder::checkpoint(std::int64_t step) const {
  return file(checkpoint_prefix + std::to_string(step) + checkpoint_suffix);
}

bool ModelFolder::has_config() const {
  std::error_code ec;
  return fs::exists(file("config.json"), ec);
}

void ModelFolder::write_config(const Settings& settings,
                               const std::string& tokenizer_fingerprint) const {
  nlohmann::json json = to_json(settings);
  json["tokenizer"] = tokenizer_fingerprint;
  const std::string text = json.dump(2) + "\n";
  ng::nn::write_atomically(file("config.json"), "gru_nmt", [&](const ng::nn::FileWriter& out) {
    out.write(text.data(), text.size());
  });
}

Settings ModelFolder::read_config(std::string* fingerprint) const {
  const std::string path = file("config.json");
  const std::string text = ng::data::read_file_bytes(path, "gru_nmt");
  nlohmann::json json;
  try {
    json = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& error) {
    throw ng::Error("gru_nmt: " + path + " is not JSON: " + error.what());
  }
  Settings settings = settings_from_json(json, path);
  if (fingerprint != nullptr) {
    NG_CHECK(json.contains("tokenizer") && json["tokenizer"].is_string(), "gru_nmt", path,
             " names no tokenizer fingerprint");
    *fingerprint = json["tokenizer"].get<std::string>();
  }
  return settings;
}

std::vector<std::int64_t> ModelFolder::checkpoint_steps() const {
  std::vector<std::int64_t> steps;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(path_, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind(checkpoint_prefix, 0) != 0 ||
        name.size() <= checkpoint_prefix.size() + checkpoint_suffix.size() ||
        name.compare(name.size() - checkpoint_suffix.size(), checkpoint_suffix.size(),
                     checkpoint_suffix) != 0)
      continue;
    const std::string digits =
        name.substr(checkpoint_prefix.size(),
                    name.size() - checkpoint_prefix.size() - checkpoint_suffix.size());
    if (!std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; }) ||
        digits.size() > 18)
      continue;
    steps.push_back(std::stoll(digits));
  }
  std::sort(steps.begin(), steps.end());
  return steps;
}

void ModelFolder::prune_checkpoints(std::int64_t keep) const {
  const auto steps = checkpoint_steps();
  for (std::size_t i = 0; i + static_cast<std::size_t>(keep) < steps.size(); ++i) {
    std::error_code ec;
    fs::remove(checkpoint(steps[i]), ec);
  }
}

LoadedModel load_model_folder(const ModelFolder& folder, ng::Generator& generator) {
  NG_CHECK(folder.has_config(), "gru_nmt", folder.path(),
           " is not a gru_nmt model folder (no config.json)");
  std::string fingerprint;
  Settings settings = folder.read_config(&fingerprint);
  auto tokenizer = ng::data::SubwordTokenizer::load(folder.file("tokenizer.model"));
  tokenizer.check_fingerprint(fingerprint, folder.file("config.json"));
  NG_CHECK(tokenizer.vocabulary_size() == settings.model.vocabulary_size, "gru_nmt",
           folder.file("tokenizer.model"), " has ", tokenizer.vocabulary_size(),
           " pieces but the model ", settings.model.vocabulary_size);
  std::error_code ec;
  std::string weights = folder.file("best.safetensors");
  if (!fs::exists(weights, ec)) weights = folder.file("model.safetensors");
  NG_CHECK(fs::exists(weights, ec), "gru_nmt", folder.path(),
           " holds no weights yet (no best.safetensors or model.safetensors)");
  auto model = std::make_unique<RnnSearch>(settings.model, generator);
  ng::nn::Metadata metadata;
  const ng::nn::StateDict state = ng::nn::load_tensors(weights, &metadata);
  tokenizer.check_checkpoint(metadata, weights);
  model->load_state_dict(state, /*strict=*/true);
  return LoadedModel{std::move(settings), std::move(tokenizer), std::move(model), weights};
}

}  // namespace gru_nmt
