#include "gnuplot.h"

#include <normgrad/normgrad.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

namespace examples {

std::optional<std::string> find_gnuplot_terminal() {
  // `set terminal` with no name lists the terminals, one per line: "  pngcairo  png ...".
  FILE* pipe = ::popen("gnuplot -e 'set terminal' 2>&1", "r");
  if (pipe == nullptr) return std::nullopt;
  std::string listing;
  char buffer[512];
  while (std::fgets(buffer, sizeof buffer, pipe)) listing += buffer;
  if (::pclose(pipe) != 0) return std::nullopt;  // 127: no gnuplot on the PATH
  std::vector<std::string> names;
  std::istringstream lines(listing);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream words(line);
    std::string name;
    if (words >> name) names.push_back(name);
  }
  for (const char* wanted : {"pngcairo", "png", "svg"})
    if (std::find(names.begin(), names.end(), wanted) != names.end()) return wanted;
  return std::nullopt;
}

std::string gnuplot_quoted(const std::string& text) {
  std::string out = "\"";
  for (const char c : text) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + '"';
}

std::string shell_quoted(const std::string& text) {
  std::string out = "'";
  for (const char c : text) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

GnuplotRun run_gnuplot(const std::string& folder, const std::string& script_name,
                       const std::string& script) {
  const std::filesystem::path script_path = std::filesystem::path(folder) / script_name;
  {
    std::ofstream out(script_path);
    NG_CHECK(out.good(), "gnuplot", "cannot open '", script_path.string(), "' for writing");
    out << script;
  }
  // gnuplot runs in the folder, so that the script's file names are relative to it.
  const std::string command =
      "cd " + shell_quoted(folder) + " && gnuplot " + shell_quoted(script_name) + " 2>&1";
  FILE* pipe = ::popen(command.c_str(), "r");
  GnuplotRun run;
  char buffer[512];
  while (pipe != nullptr && std::fgets(buffer, sizeof buffer, pipe)) run.output += buffer;
  run.ok = pipe != nullptr && ::pclose(pipe) == 0;
  return run;
}

}  // namespace examples
