#include "common/run_folder.h"

#include <normgrad/normgrad.h>

#include <ctime>
#include <filesystem>
#include <fstream>

#include "common/text_file.h"

namespace examples {

using nlohmann::json;

void throw_setting_error(const std::string& program, const char* section, const char* key,
                         const std::string& value) {
  const std::string name = std::string(section) + "." + key;
  throw normgrad::Error(
      program + ": config.json " +
      (value.empty() ? "has no " + name : "has " + name + " of the wrong type: " + value));
}

bool RunFolder::has(const std::string& name) const { return std::filesystem::exists(file(name)); }

void RunFolder::write_text(const std::string& name, const std::string& text) const {
  write_text_file(file(name), text, program_);
}

void RunFolder::write_json(const std::string& name, const json& value) const {
  write_text(name, value.dump(2) + "\n");
}

std::string RunFolder::weights(const std::string& made_by) const {
  NG_CHECK(has("model.safetensors"), program_, "'", path_, "' has no model.safetensors: ", made_by);
  return file("model.safetensors");
}

json RunFolder::read_json(const std::string& name) const {
  const std::string path = file(name);
  std::ifstream in(path);
  NG_CHECK(in.good(), program_, "'", path_, "' is not a model folder of ", program_, ": no ", name);
  try {
    return json::parse(in);
  } catch (const json::exception& error) {
    throw normgrad::Error(program_ + ": '" + path + "' is not JSON: " + error.what());
  }
}

std::string run_folder_name(const std::string& spec) {
  std::string name;
  for (const char c : spec) {
    const bool separator = c == ':' || c == ',' || c == '=' || c == '/' || c == ' ';
    if (!separator)
      name += c;
    else if (name.empty() || name.back() != '-')
      name += '-';
  }
  return name;
}

std::string today_utc() {
  const std::time_t now = std::time(nullptr);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%d", std::gmtime(&now));
  return text;
}

void check_same_run(const json& stored, const json& asked, const FlagSettings& flags,
                    const std::function<bool(const char*)>& given, const RunFolder& folder) {
  for (const auto& [flag, pointer] : flags)
    NG_CHECK(!given(flag) || stored[pointer] == asked[pointer], folder.program(), "'",
             folder.path(), "' holds a run with ", flag, " ", stored[pointer].dump(), ", not ",
             asked[pointer].dump(), ": continue it without the flag, or give another --out");
}

}  // namespace examples
