#include "plot.h"

#include <normgrad/normgrad.h>

#include <algorithm>
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

// One curve per run of this batch size, column y against column x: a run's rows are those
// with `$1 == run`, and it keeps its norm's colour in every image.
std::string plot_command(const std::vector<RunResult>& results, std::int64_t batch_size,
                         const std::map<std::string, int>& colour, int x_column, int y_column,
                         bool evaluations_only, const char* style) {
  std::vector<examples::Curve> curves;
  for (std::size_t run = 0; run < results.size(); ++run)
    if (results[run].batch_size == batch_size)
      curves.push_back({.rows = "$1 == " + std::to_string(run),
                        .line_type = colour.at(results[run].norm),
                        .title = results[run].norm});
  return examples::plot_curves(curves, x_column, y_column, evaluations_only, style);
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

examples::FiguresOutcome draw_plots(const std::string& folder,
                                    const std::vector<RunResult>& results, std::string title) {
  return examples::draw_figures(folder, "curves.gp", [&](const std::string& terminal) {
    const PlotSettings settings{.terminal = terminal, .title = title};
    return examples::FigureScript{plot_script(results, settings), plot_files(results, settings)};
  });
}

}  // namespace mnist_mlp
