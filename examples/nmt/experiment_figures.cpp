#include "nmt/experiment_figures.h"

#include "common/gnuplot.h"

namespace nmt {

using examples::gnuplot_quoted;

std::string terminal_line(const std::string& terminal, int width, int height) {
  // noenhanced: labels such as "prmsnorm:0.0625" are printed as written.
  const std::string size = " size " + std::to_string(width) + "," + std::to_string(height);
  if (terminal == "svg") return "set terminal svg" + size + " noenhanced font 'sans,11'";
  if (terminal == "png") return "set terminal png" + size + " noenhanced";
  return "set terminal pngcairo" + size + " noenhanced font 'sans,10'";
}

std::string plot_command(const std::vector<RunResult>& runs, int first_run, CurveColumn x,
                         CurveColumn y, bool measured_only, const char* style) {
  // Each curve takes its run's rows of curves.csv (column 2 numbers the runs), in its own colour.
  std::vector<examples::Curve> curves;
  for (std::size_t i = 0; i < runs.size(); ++i)
    curves.push_back({.rows = "$2 == " + std::to_string(first_run + static_cast<int>(i)),
                      .line_type = static_cast<int>(i) + 1,
                      .title = runs[i].label});
  return examples::plot_curves(curves, x, y, measured_only, style);
}

std::string training_panels(const std::string& terminal, const std::string& file,
                            const std::string& title, const std::vector<RunResult>& runs,
                            int first_run) {
  return terminal_line(terminal, 1500, 460) + "\nset output " + gnuplot_quoted(file) +
         "\nset multiplot layout 1,3 title " + gnuplot_quoted(title) +
         "\nset key top right\nset ylabel 'training loss'\nset xlabel 'training steps'\n" +
         plot_command(runs, first_run, step_column, loss_mean_column, false, "lines") +
         "set xlabel 'training seconds'\n" +
         plot_command(runs, first_run, seconds_column, loss_mean_column, false, "lines") +
         "set ylabel 'dev BLEU (greedy)'\nset xlabel 'training steps'\nset key top left\n" +
         plot_command(runs, first_run, step_column, dev_bleu_column, true,
                      "linespoints pt 7 ps 0.6") +
         "unset multiplot\nunset output\n";
}

}  // namespace nmt
