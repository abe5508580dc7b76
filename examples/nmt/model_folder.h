#pragma once
// A translation model folder: everything translate and score need, and everything train needs
// to resume.
//
//   config.json                    the settings and the tokenizer's fingerprint
//   tokenizer.model                the sentencepiece model
//   model.safetensors              the latest weights
//   best.safetensors               the weights with the best dev BLEU so far
//   checkpoint-<step>.safetensors  training states (model, Adam, generator, data position),
//                                  the last few kept
//   train.csv                      one row per step (train_log.h)
//
// Every file is written atomically (examples::RunFolder); the weights record the tokenizer's
// fingerprint, so a folder whose parts do not belong together is refused. ModelFolder knows the
// folder's files, not what a model is; ProgramFolder reads and writes a program's settings.

#include <normgrad/normgrad.h>

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/run_folder.h"
#include "nmt/training_settings.h"
#include "text/subword_tokenizer.h"

namespace nmt {

class ModelFolder : public examples::RunFolder {
 public:
  // `program` names the example in errors ("gru_nmt").
  ModelFolder(std::string path, std::string program)
      : RunFolder(std::move(path), std::move(program)) {}

  std::string checkpoint(std::int64_t step) const;

  // config.json: `settings` (an object) with the tokenizer's fingerprint added.
  void write_config_json(nlohmann::json settings, const std::string& tokenizer_fingerprint) const;
  // The parsed config.json, and its fingerprint into *fingerprint; an Error naming the file if
  // it is missing, not JSON, or (with a fingerprint wanted) names no tokenizer.
  nlohmann::json read_config_json(std::string* fingerprint) const;

  // The steps of the training states present, ascending.
  std::vector<std::int64_t> checkpoint_steps() const;
  // Removes all but the newest `keep` training states.
  void prune_checkpoints(std::int64_t keep) const;

  // The weights translate and score load: best.safetensors, or model.safetensors before any
  // dev BLEU; an Error when the folder holds neither. `name`, when given, names other weights:
  // a file in the folder (average's averaged.safetensors) or a path.
  std::string weights_file(const std::string& name = "") const;

  // Loads weights_file(name) into `model`, checked against the tokenizer's fingerprint; returns
  // the file.
  std::string load_weights(normgrad::nn::Module& model,
                           const normgrad::text::SubwordTokenizer& tokenizer,
                           const std::string& name = "") const;

  // The folder's tokenizer, checked against config.json's fingerprint and the model's
  // vocabulary size.
  normgrad::text::SubwordTokenizer load_tokenizer(const std::string& fingerprint,
                                                  std::int64_t vocabulary_size) const;
};

// The folder of a program (nmt/program.h), whose config.json holds its Program::Settings.
template <class Program> class ProgramFolder : public ModelFolder {
 public:
  using Settings = typename Program::Settings;
  explicit ProgramFolder(std::string path) : ModelFolder(std::move(path), Program::name) {}

  void write_config(const Settings& settings, const std::string& tokenizer_fingerprint) const {
    write_config_json(settings_json(settings), tokenizer_fingerprint);
  }
  // The settings, and the fingerprint into *fingerprint; an Error naming the file if it is
  // missing or not a configuration.
  Settings read_config(std::string* fingerprint) const {
    return read_settings<Settings>(read_config_json(fingerprint), file("config.json"), program());
  }
};

}  // namespace nmt
