#pragma once
// A transformer_nmt model folder (nmt/model_folder.h lists its files), with
// transformer_nmt's settings in its config.json.

#include <memory>
#include <string>
#include <vector>

#include "text/subword_tokenizer.h"
#include "model.h"
#include "nmt/model_folder.h"
#include "settings.h"

namespace transformer_nmt {

class ModelFolder : public nmt::ModelFolder {
 public:
  explicit ModelFolder(std::string path) : nmt::ModelFolder(std::move(path), "transformer_nmt") {}

  void write_config(const Settings& settings, const std::string& tokenizer_fingerprint) const;
  // The settings, and the fingerprint into *fingerprint; an Error naming the file if it is
  // missing or not a configuration.
  Settings read_config(std::string* fingerprint) const;
};

// What translate and score load: the settings, the tokenizer, and the model with the best
// weights (or the latest, before any dev BLEU), checked against each other. `weights`, when
// given, names other weights: a file in the folder (average's averaged.safetensors) or a path.
// `generator` must outlive the model.
struct LoadedModel {
  Settings settings;
  normgrad::text::SubwordTokenizer tokenizer;
  std::unique_ptr<TransformerNmt> model;
  std::string weights;  // the file the weights came from
};
LoadedModel load_model_folder(const ModelFolder& folder, normgrad::Generator& generator,
                              const std::string& weights = "");

// transformer_nmt average: the mean of the model weights of the folder's last `last` training
// states (nmt/checkpoint_average.h), checked to load into the folder's model and written
// atomically to `output` in the folder, with the tokenizer's fingerprint and the steps
// averaged. Returns the steps. An Error when the folder holds fewer training states.
std::vector<std::int64_t> average_checkpoints(const ModelFolder& folder, std::int64_t last,
                                              const std::string& output);

}  // namespace transformer_nmt
