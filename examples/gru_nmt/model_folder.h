#pragma once
// A gru_nmt model folder (nmt/model_folder.h lists its files), with gru_nmt's settings in its
// config.json.

#include <memory>
#include <string>

#include "text/subword_tokenizer.h"
#include "model.h"
#include "nmt/model_folder.h"
#include "settings.h"

namespace gru_nmt {

class ModelFolder : public nmt::ModelFolder {
 public:
  explicit ModelFolder(std::string path) : nmt::ModelFolder(std::move(path), "gru_nmt") {}

  void write_config(const Settings& settings, const std::string& tokenizer_fingerprint) const;
  // The settings, and the fingerprint into *fingerprint; an Error naming the file if it is
  // missing or not a configuration.
  Settings read_config(std::string* fingerprint) const;
};

// What translate and score load: the settings, the tokenizer, and the model with the best
// weights (or the latest, before any dev BLEU), checked against each other.
struct LoadedModel {
  Settings settings;
  normgrad::text::SubwordTokenizer tokenizer;
  std::unique_ptr<RnnSearch> model;
  std::string weights;  // the file the weights came from
};
LoadedModel load_model_folder(const ModelFolder& folder, normgrad::Generator& generator);

}  // namespace gru_nmt
