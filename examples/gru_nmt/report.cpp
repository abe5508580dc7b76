#include "report.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <sstream>

#include "nn/atomic_file.h"

namespace gru_nmt {

namespace ng = normgrad;

namespace {

std::string format(const char* pattern, double value) {
  char text[64];
  std::snprintf(text, sizeof text, pattern, value);
  return text;
}

// A number for a CSV cell, empty when unmeasured (negative by convention).
std::string cell(double value, const char* pattern = "%.4f") {
  return value < 0 ? std::string() : format(pattern, value);
}

// A CSV field, quoted as RFC 4180 says when it holds a comma or a quote.
std::string csv_field(const std::string& text) {
  if (text.find_first_of(",\"\n") == std::string::npos) return text;
  std::string out = "\"";
  for (const char c : text) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

void write_text(const std::string& path, const std::string& text) {
  ng::nn::write_atomically(path, "gru_nmt experiment", [&](const ng::nn::FileWriter& out) {
    out.write(text.data(), text.size());
  });
}

// The paper's Table 2 (TensorFlow Nematus, WMT14 En-De): Test14 BLEU and seconds per 1k steps.
struct PaperRow {
  const char* bleu;
  const char* time;
};
const std::map<std::string, PaperRow> paper_table2 = {
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

const char* display_name(const std::string& norm) {
  if (norm == "none") return "Baseline (none)";
  if (norm == "layernorm") return "LayerNorm";
  if (norm == "l2norm") return "L2-Norm";
  if (norm == "rmsnorm") return "RMSNorm";
  if (norm.rfind("prmsnorm", 0) == 0) return "pRMSNorm";
  if (norm == "weightnorm") return "WeightNorm";
  return nullptr;
}

std::string run_name(const RunResult& run) {
  const char* name = display_name(run.norm);
  std::string text = name != nullptr ? name : run.norm;
  if (run.norm.rfind("prmsnorm", 0) == 0) text += " (" + run.norm + ")";
  return text;
}

// The last dev BLEU of a run and the step it was measured at.
std::pair<double, std::int64_t> last_dev_bleu(const RunResult& run) {
  for (auto row = run.log.rbegin(); row != run.log.rend(); ++row)
    if (row->dev_bleu >= 0) return {row->dev_bleu, row->step};
  return {-1, 0};
}

// Training loss at the end of a run: the mean of its last tenth of steps.
double final_loss(const RunResult& run) {
  if (run.log.empty()) return 0;
  const std::size_t window = std::max<std::size_t>(1, run.log.size() / 10);
  double sum = 0;
  for (std::size_t i = run.log.size() - window; i < run.log.size(); ++i)
    sum += run.log[i].train_token_loss;
  return sum / static_cast<double>(window);
}

double training_seconds(const RunResult& run) {
  double total = 0;
  for (const LogRow& row : run.log) total += row.step_seconds;
  return total;
}

}  // namespace

std::optional<double> speedup_over_layernorm(const std::vector<RunResult>& runs,
                                             const RunResult& run) {
  for (const RunResult& other : runs) {
    if (other.norm == "layernorm" && other.seconds_per_1000_steps > 0)
      return 100 * (other.seconds_per_1000_steps - run.seconds_per_1000_steps) /
             other.seconds_per_1000_steps;
  }
  return std::nullopt;
}

std::vector<double> running_mean(const std::vector<LogRow>& log, std::size_t window) {
  std::vector<double> means;
  means.reserve(log.size());
  double sum = 0;
  for (std::size_t i = 0; i < log.size(); ++i) {
    sum += log[i].train_token_loss;
    if (i >= window) sum -= log[i - window].train_token_loss;
    means.push_back(sum / static_cast<double>(std::min(i + 1, window)));
  }
  return means;
}

void write_table2_csv(const std::string& path, const ExperimentResults& results) {
  std::string text =
      "norm,steps,parameters,test_bleu,test_bleu_mean,test_bleu_interval,p_against_layernorm,"
      "best_dev_bleu,seconds_per_1000_steps,spread,speedup_over_layernorm_percent,"
      "other_processes_cpu\n";
  for (const RunResult& run : results.table2) {
    const auto speedup = speedup_over_layernorm(results.table2, run);
    text += csv_field(run.norm) + "," + std::to_string(run.steps) + "," +
            std::to_string(run.parameters) + "," + cell(run.test_bleu, "%.2f") + "," +
            format("%.2f", run.test_bleu_mean) + "," + format("%.2f", run.test_bleu_interval) +
            "," + cell(run.p_against_layernorm) + "," + cell(run.best_dev_bleu, "%.2f") + "," +
            format("%.1f", run.seconds_per_1000_steps) + "," +
            format("%.1f", run.step_seconds_spread) + "," +
            (speedup ? format("%.1f", *speedup) : std::string()) + "," +
            cell(run.other_processes_cpu, "%.3f") + "\n";
  }
  write_text(path, text);
}

void write_table5_csv(const std::string& path, const ExperimentResults& results) {
  std::string text = "norm,statistic,position_1,position_2,position_3,position_4,all\n";
  for (const Table5Row& row : results.table5) {
    const auto& s = row.statistics;
    text += row.norm + ",mean";
    for (const double value : s.mean) text += "," + format("%.4f", value);
    text += "," + format("%.4f", s.mean_all) + "\n" + row.norm + ",deviation";
    for (const double value : s.deviation) text += "," + format("%.4f", value);
    text += "," + format("%.4f", s.deviation_all) + "\n";
  }
  write_text(path, text);
}

void write_curves_csv(const std::string& path, const ExperimentResults& results) {
  std::string text =
      "figure,run,label,step,training_seconds,train_loss,train_loss_mean,dev_loss,dev_bleu\n";
  int run_index = 0;
  for (const auto& [figure, runs] :
       {std::pair{1, &results.table2}, std::pair{4, &results.figure4}}) {
    for (const RunResult& run : *runs) {
      const auto means = running_mean(run.log, 25);
      double seconds = 0;
      for (std::size_t i = 0; i < run.log.size(); ++i) {
        const LogRow& row = run.log[i];
        seconds += row.step_seconds;
        text += std::to_string(figure) + "," + std::to_string(run_index) + "," +
                csv_field(run.label) + "," + std::to_string(row.step) + "," +
                format("%.3f", seconds) + "," + format("%.5f", row.train_token_loss) + "," +
                format("%.5f", means[i]) + "," + cell(row.dev_token_loss, "%.5f") + "," +
                cell(row.dev_bleu, "%.2f") + "\n";
      }
      ++run_index;
    }
  }
  write_text(path, text);
}

std::string report_markdown(const ExperimentResults& results, const ReportContext& context) {
  std::ostringstream out;
  const ExperimentBudget& b = results.budget;
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
      << "| model | test BLEU (beam) | bootstrap 95% | p vs LayerNorm | best dev BLEU | s / 1k "
         "steps | speed-up over LayerNorm | other processes' CPU | paper: Test14 | paper: s / 1k "
         "steps |\n"
      << "|---|---|---|---|---|---|---|---|---|---|\n";
  for (const RunResult& run : results.table2) {
    const auto speedup = speedup_over_layernorm(results.table2, run);
    const auto paper = paper_table2.find(run.norm);
    out << "| " << run_name(run) << " | " << format("%.2f", run.test_bleu) << " | "
        << format("%.2f", run.test_bleu_mean) << " ± " << format("%.2f", run.test_bleu_interval)
        << " | " << (run.p_against_layernorm < 0 ? "—" : format("%.4f", run.p_against_layernorm))
        << " | " << (run.best_dev_bleu < 0 ? "—" : format("%.2f", run.best_dev_bleu)) << " | "
        << format("%.1f", run.seconds_per_1000_steps) << " ± "
        << format("%.1f", run.step_seconds_spread) << " | "
        << (speedup && run.norm != "layernorm" ? format("%.1f%%", *speedup) : "—") << " | "
        << (run.other_processes_cpu < 0 ? "—" : format("%.0f%%", 100 * run.other_processes_cpu))
        << " | " << (paper != paper_table2.end() ? paper->second.bleu : "—") << " | "
        << (paper != paper_table2.end() ? paper->second.time : "—") << " |\n";
  }
  out << "\nTest BLEU is sacreBLEU's (`" << results.bleu_signature
      << "`) on the beam-search translations of the best weights by dev BLEU; the interval and "
         "the p-values come from 1000 paired bootstrap resamples against LayerNorm. Seconds per "
         "1000 steps are 1000 times the median measured step (± half the distance between the "
         "quartiles); the speed-up is (T_LN − T) / T_LN, as the paper defines it. The runs train "
         "one "
         "after another: the share of the CPU that other processes took while each trained "
         "says how far its time can be trusted on a shared machine.\n\n";

  out << "## Figure 1: training loss against steps and against time\n\n";
  for (const auto& figure : context.figures)
    if (figure.find("figure1") != std::string::npos) out << "![Figure 1](" << figure << ")\n\n";
  out << "| model | training loss per token, last tenth of the run | training seconds | last dev "
         "loss | last dev BLEU |\n|---|---|---|---|---|\n";
  for (const RunResult& run : results.table2) {
    double dev_loss = -1;
    for (const LogRow& row : run.log)
      if (row.dev_token_loss >= 0) dev_loss = row.dev_token_loss;
    const auto [bleu, step] = last_dev_bleu(run);
    out << "| " << run_name(run) << " | " << format("%.3f", final_loss(run)) << " | "
        << format("%.0f", training_seconds(run)) << " | "
        << (dev_loss < 0 ? "—" : format("%.3f", dev_loss)) << " | "
        << (bleu < 0 ? "—" : format("%.2f", bleu) + " (step " + std::to_string(step) + ")")
        << " |\n";
  }
  out << "\nThe paper (first 10k steps on WMT14): when the baseline's training loss reaches 7.0, "
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
    const char* name = display_name(row.norm);
    for (const bool mean : {true, false}) {
      out << "| " << (name != nullptr ? name : row.norm) << " | " << (mean ? "M" : "S");
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
    for (const auto& figure : context.figures)
      if (figure.find("figure4") != std::string::npos) out << "![Figure 4](" << figure << ")\n\n";
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
