#include "plot.h"

#include <normgrad/normgrad.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <sstream>

#include "common/gnuplot.h"

namespace mnist_mlp {

namespace {

std::vector<std::int64_t> batch_sizes_in_order(const std::vector<RunResult>& results) {
  std::vector<std::int64_t> sizes;
  for (const RunResult& result : results)
    if (std::find(sizes.begin(), sizes.end(), result.batch_size) == sizes.end())
      sizes.push_back(result.batch_size);
  return sizes;
}

// One curve per run of this batch size, column y against column x. A run's rows are those
// with `$1 == run` (and, for accuracy, a filled column 7); every other row gives NaN for
// both x and y, so it neither draws nor stretches the axes.
std::string plot_command(const std::vector<RunResult>& results, std::int64_t batch_size,
                         const std::map<std::string, int>& colour, int x_column, int y_column,
                         bool evaluations_only, const char* style) {
  std::string command = "plot";
  bool first = true;
  for (std::size_t run = 0; run < results.size(); ++run) {
    if (results[run].batch_size != batch_size) continue;
    const std::string selected =
        "$1 == " + std::to_string(run) + (evaluations_only ? " && valid(7)" : "");
    const auto column = [&](int number) {
      return "(" + selected + " ? $" + std::to_string(number) + " : NaN)";
    };
    command += std::string(first ? " " : ", \\\n     ") +
               (first ? examples::gnuplot_quoted("curves.csv") : "''") + " using " +
               column(x_column) + ":" + column(y_column) + " with " + style + " lt " +
               std::to_string(colour.at(results[run].norm)) + " lw 1.5 title " +
               examples::gnuplot_quoted(results[run].norm);
    first = false;
  }
  return command + "\n";
}

}  // namespace

std::vector<std::string> plot_files(const std::vector<RunResult>& results,
                                    const PlotSettings& settings) {
  std::vector<std::string> files;
  for (const std::int64_t batch_size : batch_sizes_in_order(results))
    files.push_back(examples::image_file("loss_b" + std::to_string(batch_size), settings.terminal));
  return files;
}

std::string plot_script(const std::vector<RunResult>& results, const PlotSettings& settings) {
  // Each normaliser keeps its colour in every image.
  std::map<std::string, int> colour;
  for (const RunResult& result : results)
    colour.emplace(result.norm, static_cast<int>(colour.size()) + 1);

  std::ostringstream script;
  script << examples::curves_script_header("mnist_mlp", settings.terminal, 1500, 460)
         << "set grid\nset key top right\n";
  const auto sizes = batch_sizes_in_order(results);
  const auto files = plot_files(results, settings);
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    script << "\nset output " << examples::gnuplot_quoted(files[i]) << "\n"
           << "set multiplot layout 1,3 title "
           << examples::gnuplot_quoted(settings.title + ", batch size " + std::to_string(sizes[i]))
           << "\n"
           << "set yrange [0:*]\nset ylabel 'training loss'\n"
           << "set xlabel 'training steps'\n"
           << plot_command(results, sizes[i], colour, 4, 6, false, "lines")
           << "set xlabel 'wall-clock seconds of training'\n"
           << plot_command(results, sizes[i], colour, 5, 6, false, "lines")
           << "set yrange [*:*]\nset ylabel 'test accuracy'\nset xlabel 'training steps'\n"
           << "set key bottom right\n"
           << plot_command(results, sizes[i], colour, 4, 7, true, "linespoints pt 7 ps 0.6")
           << "set key top right\nunset multiplot\nunset output\n";
  }
  return script.str();
}

PlotOutcome draw_plots(const std::string& folder, const std::vector<RunResult>& results,
                       std::string title) {
  PlotOutcome outcome;
  const auto terminal = examples::find_gnuplot_terminal();
  if (!terminal) {
    outcome.message =
        "gnuplot with a pngcairo, png or svg terminal was not found, so no plots were drawn "
        "(apt-get install gnuplot-nox); the curves are in the CSV";
    return outcome;
  }
  const PlotSettings settings{.terminal = *terminal, .title = std::move(title)};
  const auto run = examples::run_gnuplot(folder, "curves.gp", plot_script(results, settings));
  if (!run.ok) {
    outcome.message = "gnuplot failed on " +
                      (std::filesystem::path(folder) / "curves.gp").string() + ":\n" + run.output;
    return outcome;
  }
  outcome.drawn = true;
  for (const std::string& file : plot_files(results, settings))
    outcome.files.push_back((std::filesystem::path(folder) / file).string());
  if (!run.output.empty()) outcome.message = run.output;  // warnings, but images were drawn
  return outcome;
}

}  // namespace mnist_mlp
