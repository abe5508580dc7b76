#pragma once
// A gru_nmt model folder: everything translate and score need, and everything train needs to
// resume.
//
//   config.json                  the settings and the tokenizer's fingerprint
//   tokenizer.model              the sentencepiece model
//   model.safetensors            the latest weights
//   best.safetensors             the weights with the best dev BLEU so far
//   checkpoint-<step>.safetensors  training states (model, Adam, generator, data position),
//                                the last few kept
//   train.csv                    one row per logged step
// Every file is written atomically; the weights record the tokenizer's fingerprint, so a
// folder whose parts do not belong together is refused.

#include <cstdint>
#include <string>
#include <vector>

#include "data/subword_tokenizer.h"
#include "model.h"
#include "settings.h"

namespace gru_nmt {

class ModelFolder {
 public:
  explicit ModelFolder(std::string path) : path_(std::move(path)) {}
  const std::string& path() const { return path_; }

  std::string file(const std::string& name) const { return path_ + "/" + name; }
  std::string checkpoint(std::int64_t step) const;
  bool has_config() const;

  void write_config(const Settings& settings, const std::string& tokenizer_fingerprint) const;
  // The settings, and the fingerprint into *fingerprint; an Error naming the file if it is
  // missing or not a configuration.
  Settings read_config(std::string* fingerprint) const;

  // The steps of the training states present, ascending.
  std::vector<std::int64_t> checkpoint_steps() const;
  // Removes all but the newest `keep` training states.
  void prune_checkpoints(std::int64_t keep) const;

 private:
  std::string path_;
};

// What translate and score load: the settings, the tokenizer, and the model with the best
// weights (or the latest, before any dev BLEU), checked against each other.
struct LoadedModel {
  Settings settings;
  normgrad::data::SubwordTokenizer tokenizer;
  std::unique_ptr<RnnSearch> model;
  std::string weights;  // the file the weights came from
};
LoadedModel load_model_folder(const ModelFolder& folder, normgrad::Generator& generator);

}  // namespace gru_nmt
