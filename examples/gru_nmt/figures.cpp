#include "figures.h"

#include "common/gnuplot.h"
#include "nmt/experiment_figures.h"

namespace gru_nmt {

std::vector<std::string> figure_files(const ExperimentResults& results,
                                      const std::string& terminal) {
  std::vector<std::string> files{nmt::image_file("figure1", terminal)};
  if (!results.figure4.empty()) files.push_back(nmt::image_file("figure4", terminal));
  return files;
}

std::string figures_script(const ExperimentResults& results, const std::string& terminal) {
  using examples::gnuplot_quoted;
  const auto files = figure_files(results, terminal);
  std::string script =
      "# Draws curves.csv (written by gru_nmt experiment); run: gnuplot figures.gp\n"
      "set datafile separator comma\nset datafile missing ''\nset grid\n" +
      nmt::training_panels(terminal, files[0],
                           "RNNSearch, budget " + results.budget.name +
                               ": training loss per token (running mean of 25 steps) and dev BLEU",
                           results.table2, 0);
  if (!results.figure4.empty()) {
    const int first = static_cast<int>(results.table2.size());
    script += "\n" + nmt::terminal_line(terminal, 1000, 460) + "\n" + "set output " +
              gnuplot_quoted(files[1]) + "\n" + "set multiplot layout 1,2 title " +
              gnuplot_quoted("RNNSearch from weights centred at 0.2 (the paper's Figure 4)") +
              "\nset key top left\nset ylabel 'dev BLEU (greedy)'\nset xlabel 'training steps'\n" +
              nmt::plot_command(results.figure4, first, nmt::step_column, nmt::dev_bleu_column,
                                true, "linespoints pt 7 ps 0.6") +
              "set key top right\nset ylabel 'training loss'\n" +
              nmt::plot_command(results.figure4, first, nmt::step_column, nmt::loss_mean_column,
                                false, "lines") +
              "unset multiplot\nunset output\n";
  }
  return script;
}

FiguresOutcome draw_figures(const std::string& folder, const ExperimentResults& results) {
  return nmt::draw_figures(folder, [&](const std::string& terminal) {
    return nmt::FigureScript{figures_script(results, terminal), figure_files(results, terminal)};
  });
}

}  // namespace gru_nmt
