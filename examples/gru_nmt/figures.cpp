#include "figures.h"

#include <sstream>

#include "common/gnuplot.h"

namespace gru_nmt {

namespace {

using examples::gnuplot_quoted;

std::string terminal_line(const std::string& terminal, int width, int height) {
  // noenhanced: labels such as "prmsnorm:0.0625" are printed as written.
  const std::string size = " size " + std::to_string(width) + "," + std::to_string(height);
  if (terminal == "svg") return "set terminal svg" + size + " noenhanced font 'sans,11'";
  if (terminal == "png") return "set terminal png" + size + " noenhanced";
  return "set terminal pngcairo" + size + " noenhanced font 'sans,10'";
}

// One curve per run of `figure`: column y against column x of curves.csv, taking the rows
// of that run (and, for dev columns, only those where it was measured); every other row gives
// NaN, which neither draws nor stretches the axes.
std::string plot_command(const std::vector<RunResult>& runs, int first_run, int x_column,
                         int y_column, bool measured_only, const char* style) {
  std::string command = "plot";
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const std::string selected =
        "$2 == " + std::to_string(first_run + static_cast<int>(i)) +
        (measured_only ? " && valid(" + std::to_string(y_column) + ")" : "");
    const auto column = [&](int number) {
      return "(" + selected + " ? $" + std::to_string(number) + " : NaN)";
    };
    command += std::string(i == 0 ? " " : ", \\\n     ") +
               (i == 0 ? gnuplot_quoted("curves.csv") : "''") + " using " + column(x_column) + ":" +
               column(y_column) + " with " + style + " lt " + std::to_string(i + 1) +
               " lw 1.5 title " + gnuplot_quoted(runs[i].label);
  }
  return command + "\n";
}

}  // namespace

std::vector<std::string> figure_files(const ExperimentResults& results,
                                      const std::string& terminal) {
  const std::string extension = terminal == "svg" ? ".svg" : ".png";
  std::vector<std::string> files{"figure1" + extension};
  if (!results.figure4.empty()) files.push_back("figure4" + extension);
  return files;
}

std::string figures_script(const ExperimentResults& results, const std::string& terminal) {
  // curves.csv: figure,run,label,step,training_seconds,train_loss,train_loss_mean,dev_loss,
  // dev_bleu -> columns 4 step, 5 seconds, 7 smoothed loss, 9 dev BLEU.
  const auto files = figure_files(results, terminal);
  std::ostringstream script;
  script << "# Draws curves.csv (written by gru_nmt experiment); run: gnuplot figures.gp\n"
         << "set datafile separator comma\nset datafile missing ''\n"
         << "set grid\nset key top right\n"
         << terminal_line(terminal, 1500, 460) << "\n"
         << "set output " << gnuplot_quoted(files[0]) << "\n"
         << "set multiplot layout 1,3 title "
         << gnuplot_quoted("RNNSearch, budget " + results.budget.name +
                           ": training loss per token (running mean of 25 steps) and dev BLEU")
         << "\n"
         << "set ylabel 'training loss'\nset xlabel 'training steps'\n"
         << plot_command(results.table2, 0, 4, 7, false, "lines")
         << "set xlabel 'training seconds'\n"
         << plot_command(results.table2, 0, 5, 7, false, "lines")
         << "set ylabel 'dev BLEU (greedy)'\nset xlabel 'training steps'\nset key top left\n"
         << plot_command(results.table2, 0, 4, 9, true, "linespoints pt 7 ps 0.6")
         << "unset multiplot\nunset output\n";
  if (!results.figure4.empty()) {
    const int first = static_cast<int>(results.table2.size());
    script << "\n"
           << terminal_line(terminal, 1000, 460) << "\n"
           << "set output " << gnuplot_quoted(files[1]) << "\n"
           << "set multiplot layout 1,2 title "
           << gnuplot_quoted("RNNSearch from weights centred at 0.2 (the paper's Figure 4)") << "\n"
           << "set key top left\nset ylabel 'dev BLEU (greedy)'\nset xlabel 'training steps'\n"
           << plot_command(results.figure4, first, 4, 9, true, "linespoints pt 7 ps 0.6")
           << "set key top right\nset ylabel 'training loss'\n"
           << plot_command(results.figure4, first, 4, 7, false, "lines")
           << "unset multiplot\nunset output\n";
  }
  return script.str();
}

FiguresOutcome draw_figures(const std::string& folder, const ExperimentResults& results) {
  FiguresOutcome outcome;
  const auto terminal = examples::find_gnuplot_terminal();
  if (!terminal) {
    outcome.message =
        "gnuplot with a pngcairo, png or svg terminal was not found, so no figures were drawn "
        "(apt-get install gnuplot-nox); the curves are in curves.csv";
    return outcome;
  }
  const auto run = examples::run_gnuplot(folder, "figures.gp", figures_script(results, *terminal));
  if (!run.ok) {
    outcome.message = "gnuplot failed on " + folder + "/figures.gp:\n" + run.output;
    return outcome;
  }
  outcome.files = figure_files(results, *terminal);
  outcome.message = run.output;
  return outcome;
}

}  // namespace gru_nmt
