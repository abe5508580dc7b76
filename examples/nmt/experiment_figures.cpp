#include "nmt/experiment_figures.h"

#include "common/gnuplot.h"

namespace nmt {

using examples::gnuplot_quoted;

std::string image_file(const std::string& stem, const std::string& terminal) {
  return stem + (terminal == "svg" ? ".svg" : ".png");
}

std::string terminal_line(const std::string& terminal, int width, int height) {
  // noenhanced: labels such as "prmsnorm:0.0625" are printed as written.
  const std::string size = " size " + std::to_string(width) + "," + std::to_string(height);
  if (terminal == "svg") return "set terminal svg" + size + " noenhanced font 'sans,11'";
  if (terminal == "png") return "set terminal png" + size + " noenhanced";
  return "set terminal pngcairo" + size + " noenhanced font 'sans,10'";
}

std::string plot_command(const std::vector<RunResult>& runs, int first_run, CurveColumn x,
                         CurveColumn y, bool measured_only, const char* style) {
  // Each curve takes its run's rows of curves.csv (and, for dev columns, only those where the
  // value was measured); every other row gives NaN, which neither draws nor stretches the axes.
  std::string command = "plot";
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const std::string selected = "$2 == " + std::to_string(first_run + static_cast<int>(i)) +
                                 (measured_only ? " && valid(" + std::to_string(y) + ")" : "");
    const auto column = [&](int number) {
      return "(" + selected + " ? $" + std::to_string(number) + " : NaN)";
    };
    command += std::string(i == 0 ? " " : ", \\\n     ") +
               (i == 0 ? gnuplot_quoted("curves.csv") : "''") + " using " + column(x) + ":" +
               column(y) + " with " + style + " lt " + std::to_string(i + 1) + " lw 1.5 title " +
               gnuplot_quoted(runs[i].label);
  }
  return command + "\n";
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

FiguresOutcome draw_figures(const std::string& folder,
                            const std::function<FigureScript(const std::string&)>& script_for) {
  FiguresOutcome outcome;
  const auto terminal = examples::find_gnuplot_terminal();
  if (!terminal) {
    outcome.message =
        "gnuplot with a pngcairo, png or svg terminal was not found, so no figures were drawn "
        "(apt-get install gnuplot-nox); the curves are in curves.csv";
    return outcome;
  }
  const FigureScript script = script_for(*terminal);
  const auto run = examples::run_gnuplot(folder, "figures.gp", script.text);
  if (!run.ok) {
    outcome.message = "gnuplot failed on " + folder + "/figures.gp:\n" + run.output;
    return outcome;
  }
  outcome.files = script.files;
  outcome.message = run.output;
  return outcome;
}

}  // namespace nmt
