#include "report.h"

#include <map>
#include <sstream>

#include "common/gnuplot.h"

namespace gru_nmt {

namespace {

using nmt::final_loss;
using nmt::format;
using nmt::last_dev_bleu;

// The paper's Table 2 (TensorFlow Nematus, WMT14 En-De): Test14 BLEU and seconds per 1k steps.
const std::map<std::string, nmt::PaperCells> paper_table2 = {
    {"none", {"21.7", "399±3.40 s"}},
    {"layernorm", {"22.6", "665±32.5 s"}},
    {"l2norm", {"20.7", "482±19.7 s"}},
    {"rmsnorm", {"22.4", "501±11.8 s (24.7%)"}},
    {"prmsnorm:0.0625", {"22.6", "493±10.7 s (25.9%)"}},
};

// The paper's Table 5 (newstest2013): mean and deviation at positions 1-4 and over all.
struct PaperStatistics {
  const char* mean[5];
  const char* deviation[5];
};
const std::map<std::string, PaperStatistics> paper_table5 = {
    {"none",
     {{"−2.60", "−1.19", "−1.43", "−1.53", "−1.60"}, {"7.35", "2.33", "2.61", "2.73", "3.04"}}},
    {"layernorm",
     {{"−0.43", "−0.48", "−0.50", "−0.50", "−0.51"}, {"1.19", "1.51", "1.51", "1.51", "1.51"}}},
    {"rmsnorm",
     {{"−0.40", "−0.60", "−0.69", "−0.74", "−0.73"}, {"1.27", "1.51", "1.50", "1.49", "1.50"}}},
};

}  // namespace

void write_experiment_csv(const std::string& folder, const ExperimentResults& results) {
  const std::string program = "gru_nmt experiment";
  nmt::write_text_file(folder + "/table2.csv", nmt::runs_csv(results.table2), program);
  std::string text = "norm,statistic,position_1,position_2,position_3,position_4,all\n";
  for (const Table5Row& row : results.table5) {
    const auto& s = row.statistics;
    text += row.norm + ",mean";
    for (const double value : s.mean) text += "," + format("%.4f", value);
    text += "," + format("%.4f", s.mean_all) + "\n" + row.norm + ",deviation";
    for (const double value : s.deviation) text += "," + format("%.4f", value);
    text += "," + format("%.4f", s.deviation_all) + "\n";
  }
  nmt::write_text_file(folder + "/table5.csv", text, program);
  nmt::write_text_file(folder + "/curves.csv",
                       nmt::curves_csv({{1, &results.table2}, {4, &results.figure4}}), program);
}

nmt::FigureScript figures_script(const ExperimentResults& results, const std::string& terminal) {
  using examples::gnuplot_quoted;
  nmt::FigureScript script{.files = {nmt::image_file("figure1", terminal)}};
  script.text =
      "# Draws curves.csv (written by gru_nmt experiment); run: gnuplot figures.gp\n"
      "set datafile separator comma\nset datafile missing ''\nset grid\n" +
      nmt::training_panels(terminal, script.files[0],
                           "RNNSearch, budget " + results.budget.name +
                               ": training loss per token (running mean of 25 steps) and dev BLEU",
                           results.table2, 0);
  if (!results.figure4.empty()) {
    script.files.push_back(nmt::image_file("figure4", terminal));
    const int first = static_cast<int>(results.table2.size());
    script.text +=
        "\n" + nmt::terminal_line(terminal, 1000, 460) + "\n" + "set output " +
        gnuplot_quoted(script.files[1]) + "\n" + "set multiplot layout 1,2 title " +
        gnuplot_quoted("RNNSearch from weights centred at 0.2 (the paper's Figure 4)") +
        "\nset key top left\nset ylabel 'dev BLEU (greedy)'\nset xlabel 'training steps'\n" +
        nmt::plot_command(results.figure4, first, nmt::step_column, nmt::dev_bleu_column, true,
                          "linespoints pt 7 ps 0.6") +
        "set key top right\nset ylabel 'training loss'\n" +
        nmt::plot_command(results.figure4, first, nmt::step_column, nmt::loss_mean_column, false,
                          "lines") +
        "unset multiplot\nunset output\n";
  }
  return script;
}

std::string report_markdown(const ExperimentResults& results, const nmt::ReportContext& context) {
  std::ostringstream out;
  const nmt::ExperimentBudget& b = results.budget;
  out << "# RNNSearch with each normaliser: the RMSNorm paper's Table 2, Figure 1, Table 5 and "
         "Figure 4\n\n"
      << "Written by `gru_nmt experiment` on " << context.date << " (" << context.machine
      << "), budget `" << b.name << "`: " << b.steps << " training steps a run for Table 2, "
      << b.figure4_steps << " for Figure 4; dev loss every " << b.dev_loss_every
      << " steps, dev BLEU (greedy) every " << b.dev_bleu_every << "; corpus `" << context.corpus
      << "`; test BLEU on " << results.test_sentences << " sentences. The whole took "
      << format("%.0f", results.total_seconds) << " s.\n\n"
      << "The paper trains on WMT14 English-German (4.5M pairs) for hundreds of thousands of "
         "steps with the paper preset on a GPU; this is the same model and comparison at the "
         "budget above, so the BLEU scores are far lower and only their order and the timings "
         "can be set beside the paper's. Every run starts from the same seed: the same batches "
         "in the same order and the same initial weights (the norms add only gains and "
         "biases).\n\n";

  out << "## Table 2: test BLEU and training time\n\n"
      << nmt::results_table(results.table2, paper_table2, results.bleu_signature);

  out << "## Figure 1: training loss against steps and against time\n\n";
  out << nmt::figure_link(context.figures, "figure1", "Figure 1");
  out << nmt::training_table(results.table2);
  out << "The paper (first 10k steps on WMT14): when the baseline's training loss reaches 7.0, "
         "LayerNorm's is 5.4 after the same number of steps but only 5.9 after the same "
         "wall-clock time.\n\n";

  out << "## Table 5: the decoder GRU's U h on the dev set\n\n"
      << "Mean (M) and standard deviation (S) of the hidden-to-hidden pre-activation of the "
         "decoder's first GRU, before its norm, at target positions 1-4 and over all positions, "
         "with teacher forcing.\n\n"
      << "| model | stat | 1 | 2 | 3 | 4 | all | paper: 1 | 2 | 3 | 4 | all |\n"
      << "|---|---|---|---|---|---|---|---|---|---|---|---|\n";
  for (const Table5Row& row : results.table5) {
    const auto paper = paper_table5.find(row.norm);
    for (const bool mean : {true, false}) {
      out << "| " << nmt::norm_name(row.norm) << " | " << (mean ? "M" : "S");
      const auto& values = mean ? row.statistics.mean : row.statistics.deviation;
      for (const double value : values) out << " | " << format("%.2f", value);
      out << " | " << format("%.2f", mean ? row.statistics.mean_all : row.statistics.deviation_all);
      for (int i = 0; i < 5; ++i) {
        out << " | ";
        if (paper != paper_table5.end())
          out << (mean ? paper->second.mean[i] : paper->second.deviation[i]);
      }
      out << " |\n";
    }
  }
  out << "\n";

  if (!results.figure4.empty()) {
    out << "## Figure 4: weights initialised around 0.2\n\n";
    out << nmt::figure_link(context.figures, "figure4", "Figure 4");
    out << "| model | best dev BLEU | last dev BLEU | training loss per token, last tenth |\n"
           "|---|---|---|---|\n";
    for (const RunResult& run : results.figure4) {
      const auto [bleu, step] = last_dev_bleu(run);
      out << "| " << run.label << " | "
          << (run.best_dev_bleu < 0 ? "—" : format("%.2f", run.best_dev_bleu)) << " | "
          << (bleu < 0 ? "—" : format("%.2f", bleu) + " (step " + std::to_string(step) + ")")
          << " | " << format("%.3f", final_loss(run)) << " |\n";
    }
    out << "\nThe paper: with the weights' centre moved to 0.2, LayerNorm becomes very unstable "
           "and RMSNorm stays more robust; both do worse than from the normal initialisation.\n\n";
  }

  out << "## Settings\n\nEvery run's `config.json` is in its folder under `runs/`; the base "
         "settings:\n\n```\n"
      << context.settings << "```\n";
  return out.str();
}

}  // namespace gru_nmt
