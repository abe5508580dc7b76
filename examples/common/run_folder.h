#pragma once
// What every program's model folder builds on: files written whole or not at all, the
// config.json that says which run the folder holds (read back with errors that name the file),
// the folder name a norm spec gets, and the check that a flag given for a folder that holds a
// run does not contradict it. The training state a run continues from is common/training_state.h.
//
//   class ModelFolder : public examples::RunFolder { ... };   // a program's own folder
//   ModelFolder folder("out/cnn/rmsnorm");
//   folder.write_text("train.csv", csv);
//   nlohmann::json config = folder.read_json("config.json");

#include <normgrad/normgrad.h>

#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

namespace examples {

// The Error of read_setting: "config.json has no S.K", or with `value`, "has the wrong type".
[[noreturn]] void throw_setting_error(const std::string& program, const char* section,
                                      const char* key, const std::string& value);

class RunFolder {
 public:
  // `program` names the program in error messages.
  RunFolder(std::string path, std::string program)
      : path_(std::move(path)), program_(std::move(program)) {}
  const std::string& path() const { return path_; }
  const std::string& program() const { return program_; }
  std::string file(const std::string& name) const { return path_ + "/" + name; }
  bool has(const std::string& name) const;
  // Whether the folder holds a run: its config.json, written when the run starts.
  bool has_config() const { return has("config.json"); }
  // Makes the file hold exactly `text`, creating the folder if needed (write_text_file).
  void write_text(const std::string& name, const std::string& text) const;
  // The same with `value`, indented, and a newline at the end.
  void write_json(const std::string& name, const nlohmann::json& value) const;
  // model.safetensors, the weights a run keeps; an Error saying what makes them when the
  // folder has none yet (`made_by`: "train it to its first validation").
  std::string weights(const std::string& made_by) const;
  // The file's JSON; a normgrad::Error saying the folder is not one of the program's when the
  // file is missing, and naming the file when it is not JSON.
  nlohmann::json read_json(const std::string& name) const;

 private:
  std::string path_, program_;
};

// Reads the setting json[section][key] of a config.json into `into`; a normgrad::Error naming
// `program` and the key when it is missing or of another type (a hand-edited file).
template <typename T>
void read_setting(const nlohmann::json& json, const char* section, const char* key, T& into,
                  const std::string& program) {
  if (!json.is_object() || !json.contains(section) || !json[section].is_object() ||
      !json[section].contains(key))
    throw_setting_error(program, section, key, "");
  try {
    json[section][key].get_to(into);
  } catch (const nlohmann::json::exception&) {
    throw_setting_error(program, section, key, json[section][key].dump());
  }
}

// A configuration whose settings are listed once, for writing and reading: the program defines
// beside it `for_each_setting(config, visit)`, a template calling visit(section, key, value)
// for every setting, and these make config.json's JSON from it and read it back (read_setting:
// an Error naming the setting that is missing or of the wrong type).
template <class Config> nlohmann::json settings_to_json(const Config& config) {
  nlohmann::json json = nlohmann::json::object();
  for_each_setting(config, [&](const char* section, const char* key, const auto& value) {
    json[section][key] = value;
  });
  return json;
}

template <class Config>
Config settings_from_json(const nlohmann::json& json, const std::string& program) {
  Config config;
  for_each_setting(config, [&](const char* section, const char* key, auto& value) {
    read_setting(json, section, key, value, program);
  });
  return config;
}

// A run's folder name from its spec: every run of ':' ',' '=' '/' and spaces becomes one '-'
// ("prmsnorm:0.125,eps=1e-8" -> "prmsnorm-0.125-eps-1e-8").
std::string run_folder_name(const std::string& spec);

// Today's date in UTC, "2026-11-26", for the reports.
std::string today_utc();

// A folder that holds a run continues it: every flag the user gave (`given(flag)`) must agree
// with the stored run, where the flag's setting sits at its JSON pointer in both; else a
// normgrad::Error naming the flag, both values and what to do.
using FlagSettings = std::vector<std::pair<const char*, nlohmann::json::json_pointer>>;
void check_same_run(const nlohmann::json& stored, const nlohmann::json& asked,
                    const FlagSettings& flags, const std::function<bool(const char*)>& given,
                    const RunFolder& folder);

// The model of the run `folder` holds, with the weights it keeps (RunFolder::weights, `made_by`
// saying what makes them), on `device`. `Folder::read_config().model` gives the settings
// `Model` is built from.
template <class Model, class Folder>
std::unique_ptr<Model> load_trained_model(
    const Folder& folder, normgrad::Device device,
    const std::string& made_by = "train it to its first validation") {
  auto model = std::make_unique<Model>(folder.read_config().model);
  normgrad::io::load(*model, folder.weights(made_by));
  model->to(device);
  return model;
}

// The run `train` trains in `folder`: the one the folder holds, which no flag the user gave
// may contradict (check_same_run), or else the new run `asked`. `Folder::read_config` gives
// the program's configuration, and `to_json` writes it.
template <class Folder, class Config>
Config run_to_train(const Folder& folder, const Config& asked, const FlagSettings& flags,
                    const std::function<bool(const char*)>& given) {
  if (!folder.has_config()) return asked;
  const Config stored = folder.read_config();
  check_same_run(to_json(stored), to_json(asked), flags, given, folder);
  return stored;
}

}  // namespace examples
