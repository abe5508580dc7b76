#include "report.h"

#include <map>
#include <sstream>

namespace transformer_nmt {

namespace {

using nmt::format;

// The paper's Table 4 (Transformer base, WMT14 En-De, 300k steps): Test14 BLEU and seconds per
// 1k steps on a Tesla V100. Without a norm, training failed.
const std::map<std::string, nmt::PaperCells> paper_table4 = {
    {"none", {"– (failed)", "210±0.23 s"}},
    {"layernorm", {"26.6", "248±1.31 s"}},
    {"rmsnorm", {"26.8", "231±0.04 s (6.9%)"}},
    {"prmsnorm:0.0625", {"26.5", "225±1.63 s (9.3%)"}},
};

}  // namespace

void write_experiment_csv(const std::string& folder, const ExperimentResults& results) {
  const std::string program = "transformer_nmt experiment";
  nmt::write_text_file(folder + "/table4.csv", nmt::runs_csv(results.table4), program);
  nmt::write_text_file(folder + "/pre_norm.csv", nmt::runs_csv(results.pre_norm), program);
  nmt::write_text_file(folder + "/curves.csv",
                       nmt::curves_csv({{1, &results.table4}, {2, &results.pre_norm}}), program);
}

nmt::FigureScript figures_script(const ExperimentResults& results, const std::string& terminal) {
  nmt::FigureScript script;
  script.text =
      "# Draws curves.csv (written by transformer_nmt experiment); run: gnuplot figures.gp\n"
      "set datafile separator comma\nset datafile missing ''\nset grid\n";
  const std::string title = "Transformer, budget " + results.budget.name +
                            ": training loss per token (running mean of 25 steps) and dev BLEU";
  script.files.push_back(nmt::image_file("post_norm", terminal));
  script.text +=
      nmt::training_panels(terminal, script.files.back(), title + ", post-norm", results.table4, 0);
  if (!results.pre_norm.empty()) {
    script.files.push_back(nmt::image_file("pre_norm", terminal));
    script.text +=
        "\n" + nmt::training_panels(terminal, script.files.back(), title + ", pre-norm",
                                    results.pre_norm, static_cast<int>(results.table4.size()));
  }
  return script;
}

std::string report_markdown(const ExperimentResults& results, const nmt::ReportContext& context) {
  std::ostringstream out;
  const nmt::ExperimentBudget& b = results.budget;
  out << "# The Transformer with each normaliser: the RMSNorm paper's Table 4\n\n"
      << "Written by `transformer_nmt experiment` on " << context.date << " (" << context.machine
      << "), budget `" << b.name << "`: " << b.steps << " training steps a run; dev loss every "
      << b.dev_loss_every << " steps, dev BLEU (greedy) every " << b.dev_bleu_every << "; corpus `"
      << context.corpus << "`; test BLEU on " << results.test_sentences
      << " sentences. The whole took " << format("%.0f", results.total_seconds) << " s.\n\n"
      << "The paper trains the base Transformer on WMT14 English-German (4.5M pairs) for 300k "
         "steps on a V100; this is the same comparison with a smaller model at the budget above, "
         "so the BLEU scores are far lower and only their order and the timings can be set "
         "beside the paper's. Every run starts from the same seed: the same batches in the same "
         "order and the same initial weights (the norms add only gains and biases).\n\n";

  out << "## Table 4: test BLEU and training time (post-norm, as the paper)\n\n"
      << nmt::results_table(results.table4, paper_table4, results.bleu_signature);

  out << "## Training curves\n\n"
      << nmt::figure_link(context.figures, "post_norm", "post-norm training curves")
      << nmt::training_table(results.table4)
      << "A run trained when its training loss over the last tenth of its steps is at least 10% "
         "below that over the first tenth. The paper: without a norm the Transformer fails to "
         "train (BLEU 0 after 300k steps).\n\n";

  if (!results.pre_norm.empty()) {
    out << "## Pre-norm: x + F(Norm(x))\n\n"
        << "The same norms in the pre-norm Transformer, compared among themselves (the paper "
           "trains post-norm only).\n\n"
        << nmt::results_table(results.pre_norm, {}, results.bleu_signature)
        << nmt::figure_link(context.figures, "pre_norm", "pre-norm training curves")
        << nmt::training_table(results.pre_norm);
  }

  out << "## Settings\n\nEvery run's `config.json` is in its folder under `runs/`; the base "
         "settings:\n\n```\n"
      << context.settings << "```\n";
  return out.str();
}

}  // namespace transformer_nmt
