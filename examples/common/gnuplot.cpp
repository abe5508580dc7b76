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

std::string curves_script_header(const std::string& writer, const std::string& terminal, int width,
                                 int height) {
  std::ostringstream script;
  script << "# Draws curves.csv (written by " << writer << "); run: gnuplot curves.gp\n"
         << "set terminal " << terminal << " size " << width << "," << height << "\n"
         << "set termoption noenhanced\n"
         << "set datafile separator ','\n";
  return script.str();
}

std::string image_file(const std::string& name, const std::string& terminal) {
  return name + (terminal == "svg" ? ".svg" : ".png");
}

std::optional<std::string> draw_curves(const std::string& folder, const std::string& program,
                                       const std::string& name, int width, int height,
                                       const std::string& body) {
  const auto terminal = find_gnuplot_terminal();
  if (!terminal) {
    std::fprintf(stderr,
                 "%s experiment: no gnuplot with a png or svg terminal; curves.csv has "
                 "the curves\n",
                 program.c_str());
    return std::nullopt;
  }
  const std::string image = image_file(name, *terminal);
  const std::string script =
      curves_script_header(program + " experiment", *terminal, width, height) + "set output " +
      gnuplot_quoted(image) + "\n" + body;
  const GnuplotRun drawn = run_gnuplot(folder, "curves.gp", script);
  if (!drawn.ok) {
    std::fprintf(stderr, "%s experiment: gnuplot failed: %s\n", program.c_str(),
                 drawn.output.c_str());
    return std::nullopt;
  }
  return image;
}

std::string plot_curves(const std::vector<Curve>& curves, int x, int y, bool measured_only,
                        const std::string& style) {
  std::string command = "plot";
  for (std::size_t i = 0; i < curves.size(); ++i) {
    const std::string rows =
        curves[i].rows + (measured_only ? " && valid(" + std::to_string(y) + ")" : "");
    const auto column = [&](int number) {
      return "(" + rows + " ? $" + std::to_string(number) + " : NaN)";
    };
    command += std::string(i == 0 ? " " : ", \\\n     ") +
               (i == 0 ? gnuplot_quoted("curves.csv") : "''") + " using " + column(x) + ":" +
               column(y) + " with " + style + " lt " + std::to_string(curves[i].line_type) +
               " lw 1.5 title " + gnuplot_quoted(curves[i].title);
  }
  return command + "\n";
}

FiguresOutcome draw_figures(
    const std::string& folder, const std::string& script_name,
    const std::function<FigureScript(const std::string& terminal)>& script_for) {
  FiguresOutcome outcome;
  const auto terminal = find_gnuplot_terminal();
  if (!terminal) {
    outcome.message =
        "gnuplot with a pngcairo, png or svg terminal was not found, so no figures were drawn "
        "(apt-get install gnuplot-nox); the curves are in curves.csv";
    return outcome;
  }
  const FigureScript script = script_for(*terminal);
  const GnuplotRun run = run_gnuplot(folder, script_name, script.text);
  if (!run.ok) {
    outcome.message = "gnuplot failed on " + folder + "/" + script_name + ":\n" + run.output;
    return outcome;
  }
  outcome.files = script.files;
  outcome.message = run.output;  // warnings, but the images were drawn
  return outcome;
}

std::string plot_per_norm(const std::vector<std::string>& norms, const std::string& x,
                          const std::string& y, const std::string& style) {
  // Inside the selecting expression a column number is a value, $N; as a using entry of its
  // own it stays N ("$N" alone is a gnuplot error: column() called from invalid context).
  const auto value = [](const std::string& expression) {
    return expression.front() == '(' ? expression : "$" + expression;
  };
  std::string plot = "plot ";
  for (std::size_t i = 0; i < norms.size(); ++i)
    plot += (i == 0 ? "" : ", ") + gnuplot_quoted("curves.csv") + " using (strcol(1) eq " +
            gnuplot_quoted(norms[i]) + " ? " + value(x) + " : NaN):" + y + " with " + style +
            " title " + gnuplot_quoted(norms[i]);
  return plot + "\n";
}

}  // namespace examples
