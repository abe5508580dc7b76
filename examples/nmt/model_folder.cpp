#include "model_folder.h"

#include <normgrad/normgrad.h>

#include <algorithm>
#include <filesystem>

namespace nmt {

namespace ng = normgrad;
namespace fs = std::filesystem;

namespace {
const std::string checkpoint_prefix = "checkpoint-";
const std::string checkpoint_suffix = ".safetensors";
}  // namespace

std::string ModelFolder::checkpoint(std::int64_t step) const {
  return file(checkpoint_prefix + std::to_string(step) + checkpoint_suffix);
}

void ModelFolder::write_config_json(nlohmann::json settings,
                                    const std::string& tokenizer_fingerprint) const {
  settings["tokenizer"] = tokenizer_fingerprint;
  write_json("config.json", settings);
}

nlohmann::json ModelFolder::read_config_json(std::string* fingerprint) const {
  const std::string path = file("config.json");
  const nlohmann::json json = read_json("config.json");
  NG_CHECK(json.is_object(), program(), path, " is not a ", program(), " configuration");
  if (fingerprint != nullptr) {
    NG_CHECK(json.contains("tokenizer") && json["tokenizer"].is_string(), program(), path,
             " names no tokenizer fingerprint");
    *fingerprint = json["tokenizer"].get<std::string>();
  }
  return json;
}

std::vector<std::int64_t> ModelFolder::checkpoint_steps() const {
  std::vector<std::int64_t> steps;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(path(), ec)) {
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

std::string ModelFolder::weights_file(const std::string& name) const {
  std::error_code ec;
  if (!name.empty()) {
    const std::string inside = file(name);
    const std::string weights = fs::exists(inside, ec) ? inside : name;
    NG_CHECK(fs::is_regular_file(weights, ec), program(), "--weights ", name, ": no such file in ",
             path(), " or elsewhere");
    return weights;
  }
  std::string weights = file("best.safetensors");
  if (!fs::exists(weights, ec)) weights = file("model.safetensors");
  NG_CHECK(fs::exists(weights, ec), program(), path(),
           " holds no weights yet (no best.safetensors or model.safetensors)");
  return weights;
}

std::string ModelFolder::load_weights(ng::nn::Module& model,
                                      const ng::text::SubwordTokenizer& tokenizer,
                                      const std::string& name) const {
  const std::string weights = weights_file(name);
  ng::io::Metadata metadata;
  const ng::nn::StateDict state = ng::io::load_tensors(weights, &metadata);
  tokenizer.check_checkpoint(metadata, weights);
  model.load_state_dict(state, /*strict=*/true);
  return weights;
}

ng::text::SubwordTokenizer ModelFolder::load_tokenizer(const std::string& fingerprint,
                                                       std::int64_t vocabulary_size) const {
  auto tokenizer = ng::text::SubwordTokenizer::load(file("tokenizer.model"));
  tokenizer.check_fingerprint(fingerprint, file("config.json"));
  NG_CHECK(tokenizer.vocabulary_size() == vocabulary_size, program(), file("tokenizer.model"),
           " has ", tokenizer.vocabulary_size(), " pieces but the model ", vocabulary_size);
  return tokenizer;
}

}  // namespace nmt
