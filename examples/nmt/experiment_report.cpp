#include "nmt/experiment_report.h"

#include <algorithm>
#include <cmath>
#include <ctime>
#include <iostream>
#include <sstream>

#include "common/number_text.h"
#include "common/run_folder.h"

namespace nmt {

namespace ng = normgrad;

std::string format(const char* pattern, double value) {
  return examples::format_number(pattern, value);
}

std::string cell(double value, const char* pattern) {
  return value < 0 ? std::string() : format(pattern, value);
}

std::string csv_field(const std::string& text) {
  if (text.find_first_of(",\"\n") == std::string::npos) return text;
  std::string out = "\"";
  for (const char c : text) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

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

namespace {

// The mean training loss per token of rows [first, last).
double mean_loss(const std::vector<LogRow>& log, std::size_t first, std::size_t last) {
  double sum = 0;
  for (std::size_t i = first; i < last; ++i) sum += log[i].train_token_loss;
  return sum / static_cast<double>(last - first);
}

}  // namespace

double final_loss(const RunResult& run) {
  if (run.log.empty()) return 0;
  const std::size_t window = std::max<std::size_t>(1, run.log.size() / 10);
  return mean_loss(run.log, run.log.size() - window, run.log.size());
}

double training_seconds(const RunResult& run) {
  double total = 0;
  for (const LogRow& row : run.log) total += row.step_seconds;
  return total;
}

std::pair<double, std::int64_t> last_dev_bleu(const RunResult& run) {
  for (auto row = run.log.rbegin(); row != run.log.rend(); ++row)
    if (row->dev_bleu >= 0) return {row->dev_bleu, row->step};
  return {-1, 0};
}

double last_dev_loss(const RunResult& run) {
  for (auto row = run.log.rbegin(); row != run.log.rend(); ++row)
    if (row->dev_token_loss >= 0) return row->dev_token_loss;
  return -1;
}

std::string training_failure(const RunResult& run) {
  for (const LogRow& row : run.log)
    if (!std::isfinite(row.train_token_loss)) return "diverged at step " + std::to_string(row.step);
  if (run.log.size() < 2) return "";
  const std::size_t window = std::max<std::size_t>(1, run.log.size() / 10);
  const double first = mean_loss(run.log, 0, window);
  return final_loss(run) < 0.9 * first ? "" : "did not learn";
}

std::string norm_name(const std::string& norm) {
  if (norm == "none") return "Baseline (none)";
  if (norm == "layernorm") return "LayerNorm";
  if (norm == "l2norm") return "L2-Norm";
  if (norm == "rmsnorm") return "RMSNorm";
  if (norm.rfind("prmsnorm", 0) == 0) return "pRMSNorm (" + norm + ")";
  if (norm == "weightnorm") return "WeightNorm";
  return norm;
}

std::string run_name(const RunResult& run) {
  // A label is the norm spec and what sets the run apart: "rmsnorm, pre-norm".
  const std::string rest =
      run.label.rfind(run.norm, 0) == 0 ? run.label.substr(run.norm.size()) : std::string();
  return norm_name(run.norm) + rest;
}

namespace {

// "yes", or training_failure's account of why not ("did not learn", "diverged at step 40").
std::string trained_cell(const RunResult& run) {
  const std::string failure = training_failure(run);
  return failure.empty() ? "yes" : csv_field(failure);
}

}  // namespace

std::string runs_csv(const std::vector<RunResult>& runs) {
  std::string text =
      "run,norm,steps,parameters,test_bleu,test_bleu_mean,test_bleu_interval,"
      "p_against_layernorm,best_dev_bleu,seconds_per_1000_steps,spread,"
      "speedup_over_layernorm_percent,other_processes_cpu,trained\n";
  for (const RunResult& run : runs) {
    const auto speedup = speedup_over_layernorm(runs, run);
    text += csv_field(run.label) + "," + csv_field(run.norm) + "," + std::to_string(run.steps) +
            "," + std::to_string(run.parameters) + "," + cell(run.test_bleu, "%.2f") + "," +
            format("%.2f", run.test_bleu_mean) + "," + format("%.2f", run.test_bleu_interval) +
            "," + cell(run.p_against_layernorm) + "," + cell(run.best_dev_bleu, "%.2f") + "," +
            format("%.1f", run.seconds_per_1000_steps) + "," +
            format("%.1f", run.step_seconds_spread) + "," +
            (speedup ? format("%.1f", *speedup) : std::string()) + "," +
            cell(run.other_processes_cpu, "%.3f") + "," + trained_cell(run) + "\n";
  }
  return text;
}

std::string curves_csv(const std::vector<CurveGroup>& groups) {
  std::string text =
      "figure,run,label,step,training_seconds,train_loss,train_loss_mean,dev_loss,dev_bleu\n";
  int run_index = 0;
  for (const CurveGroup& group : groups) {
    for (const RunResult& run : *group.runs) {
      const auto means = running_mean(run.log, 25);
      double seconds = 0;
      for (std::size_t i = 0; i < run.log.size(); ++i) {
        const LogRow& row = run.log[i];
        seconds += row.step_seconds;
        text += std::to_string(group.figure) + "," + std::to_string(run_index) + "," +
                csv_field(run.label) + "," + std::to_string(row.step) + "," +
                format("%.3f", seconds) + "," + format("%.5f", row.train_token_loss) + "," +
                format("%.5f", means[i]) + "," + cell(row.dev_token_loss, "%.5f") + "," +
                cell(row.dev_bleu, "%.2f") + "\n";
      }
      ++run_index;
    }
  }
  return text;
}

std::string results_table(const std::vector<RunResult>& runs,
                          const std::map<std::string, PaperCells>& paper,
                          const std::string& bleu_signature) {
  std::ostringstream out;
  out << "| model | test BLEU (beam) | bootstrap 95% | p vs LayerNorm | best dev BLEU | s / 1k "
         "steps | speed-up over LayerNorm | other processes' CPU | paper: Test14 | paper: s / 1k "
         "steps |\n"
      << "|---|---|---|---|---|---|---|---|---|---|\n";
  for (const RunResult& run : runs) {
    const auto speedup = speedup_over_layernorm(runs, run);
    // The paper's cells belong to its setting: a run that differs in more than its norm (a
    // label beyond the spec) gets none.
    const auto found = run.label == run.norm ? paper.find(run.norm) : paper.end();
    out << "| " << run_name(run) << " | " << format("%.2f", run.test_bleu) << " | "
        << format("%.2f", run.test_bleu_mean) << " ± " << format("%.2f", run.test_bleu_interval)
        << " | " << (run.p_against_layernorm < 0 ? "—" : format("%.4f", run.p_against_layernorm))
        << " | " << (run.best_dev_bleu < 0 ? "—" : format("%.2f", run.best_dev_bleu)) << " | "
        << format("%.1f", run.seconds_per_1000_steps) << " ± "
        << format("%.1f", run.step_seconds_spread) << " | "
        << (speedup && run.norm != "layernorm" ? format("%.1f%%", *speedup) : "—") << " | "
        << (run.other_processes_cpu < 0 ? "—" : format("%.0f%%", 100 * run.other_processes_cpu))
        << " | " << (found != paper.end() ? found->second.bleu : "—") << " | "
        << (found != paper.end() ? found->second.time : "—") << " |\n";
  }
  out << "\nTest BLEU is sacreBLEU's (`" << bleu_signature
      << "`) on the beam-search translations of the best weights by dev BLEU; the interval and "
         "the p-values come from 1000 paired bootstrap resamples against LayerNorm. Seconds per "
         "1000 steps are 1000 times the median measured step (± half the distance between the "
         "quartiles); the speed-up is (T_LN − T) / T_LN, as the paper defines it. The runs train "
         "one after another: the share of the CPU that other processes took while each trained "
         "says how far its time can be trusted on a shared machine.\n\n";
  return out.str();
}

std::string training_table(const std::vector<RunResult>& runs) {
  std::ostringstream out;
  out << "| model | training loss per token, last tenth of the run | training seconds | last dev "
         "loss | last dev BLEU | trained? |\n|---|---|---|---|---|---|\n";
  for (const RunResult& run : runs) {
    const double dev_loss = last_dev_loss(run);
    const auto [bleu, step] = last_dev_bleu(run);
    const std::string failure = training_failure(run);
    out << "| " << run_name(run) << " | " << format("%.3f", final_loss(run)) << " | "
        << format("%.0f", training_seconds(run)) << " | "
        << (dev_loss < 0 ? "—" : format("%.3f", dev_loss)) << " | "
        << (bleu < 0 ? "—" : format("%.2f", bleu) + " (step " + std::to_string(step) + ")") << " | "
        << (failure.empty() ? "yes" : "**no: " + failure + "**") << " |\n";
  }
  return out.str() + "\n";
}

std::string figure_link(const std::vector<std::string>& figures, const std::string& stem,
                        const std::string& caption) {
  for (const auto& figure : figures)
    if (figure.rfind(stem + ".", 0) == 0) return "![" + caption + "](" + figure + ")\n\n";
  return "";
}

std::string machine_description(const ng::Device& device) {
  if (!device.is_cpu()) return "GPU " + device.str();
  return ng::io::processor_model() + ", " + std::to_string(ng::get_num_threads()) + " threads";
}

void publish_report(const std::string& out, const std::string& report, const std::string& program) {
  write_text_file(out + "/report.md", report, program);
  std::cout << report.substr(0, report.find("## Settings"));
  std::cerr << "report: " << out << "/report.md\n";
}

}  // namespace nmt
