#pragma once
// What a translation experiment's report is made of, whatever its model: the numbers a run's
// log gives (speed-up, running mean, final loss), the CSV files, the markdown tables of test
// BLEU and training, and the report's publication. Each program's report.cpp adds its
// own tables and words.
//
//   runs.csv    (runs_csv) one row per run: norm, steps, parameters, test BLEU with its
//               bootstrap mean and 95% half-width, p against LayerNorm, best dev BLEU, seconds
//               per 1000 steps and their spread, speed-up over LayerNorm, other processes' CPU
//   curves.csv  (curves_csv) every logged step of every run: figure, run, label, step, training
//               seconds, training loss per token and its running mean, dev loss, dev BLEU

#include <normgrad/normgrad.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/text_file.h"
#include "nmt/experiment_runs.h"

namespace nmt {

// printf of one number: format("%.2f", 3.14159) == "3.14".
std::string format(const char* pattern, double value);

// A number for a CSV cell, empty when unmeasured (negative by convention).
std::string cell(double value, const char* pattern = "%.4f");

// A CSV field, quoted as RFC 4180 says when it holds a comma, a quote or a line end.
std::string csv_field(const std::string& text);

// Writes `text` to `path` atomically (examples/common/text_file.h).
using examples::write_text_file;

// (T_LN - T) / T_LN in percent, the paper's speed-up of a run over LayerNorm; nullopt without a
// LayerNorm run among `runs`.
std::optional<double> speedup_over_layernorm(const std::vector<RunResult>& runs,
                                             const RunResult& run);

// The mean of each window of `window` losses ending at a row (fewer at the start): the
// training loss is per batch and noisy, the curves show its trend.
std::vector<double> running_mean(const std::vector<LogRow>& log, std::size_t window);

// Training loss per token at the end of a run: the mean of its last tenth of steps.
double final_loss(const RunResult& run);

// The sum of the run's measured step times.
double training_seconds(const RunResult& run);

// The last dev BLEU and the step it was measured at; {-1, 0} when none was.
std::pair<double, std::int64_t> last_dev_bleu(const RunResult& run);

// The last dev loss per token; -1 when none was measured.
double last_dev_loss(const RunResult& run);

// Whether a run trained: "diverged at step N" when its training loss became infinite or NaN,
// "did not learn" when the mean of its last tenth of steps is not below that of its first
// tenth by 10%, and "" when it learned.
std::string training_failure(const RunResult& run);

// The paper's name of a norm ("RMSNorm", "pRMSNorm (prmsnorm:0.0625)", "Baseline (none)"), or
// the spec itself; a run's name adds what its label adds to the norm.
std::string norm_name(const std::string& norm);
std::string run_name(const RunResult& run);

std::string runs_csv(const std::vector<RunResult>& runs);

// The runs of one figure, numbered in curves.csv from `first_run`.
struct CurveGroup {
  int figure = 1;
  const std::vector<RunResult>* runs = nullptr;
};
std::string curves_csv(const std::vector<CurveGroup>& groups);

// The paper's cells of a norm's row: its test BLEU and its seconds per 1000 steps.
struct PaperCells {
  const char* bleu;
  const char* time;
};

// The markdown table of test BLEU and training time: each run's test BLEU, bootstrap interval,
// p-value against LayerNorm, best dev BLEU, seconds per 1000 steps, speed-up over LayerNorm,
// other processes' CPU share, and the paper's two cells for its norm; then the note that
// says how each was measured (`bleu_signature`: sacreBLEU's signature).
std::string results_table(const std::vector<RunResult>& runs,
                          const std::map<std::string, PaperCells>& paper,
                          const std::string& bleu_signature);

// The markdown table of how each run ended: its final training loss, training seconds, last
// dev loss and BLEU, and whether it trained (training_failure).
std::string training_table(const std::vector<RunResult>& runs);

// What a report says of where it was made.
struct ReportContext {
  std::string date;                  // "2026-11-26"
  std::string machine;               // CPU model and threads, or the GPU
  std::string corpus;                // the corpus folder
  std::string settings;              // the base settings, as describe() prints them
  std::vector<std::string> figures;  // image files drawn, relative to the report's folder
};

// "AMD EPYC 7B13, 2 threads", or the GPU.
std::string machine_description(const normgrad::Device& device);

// A markdown image of the first of `figures` named `stem` and any extension, with its caption
// ("![Figure 1](figure1.png)" and a blank line); nothing when none is.
std::string figure_link(const std::vector<std::string>& figures, const std::string& stem,
                        const std::string& caption);

// Writes report.md into `out` and prints it on standard output up to its "## Settings" section.
void publish_report(const std::string& out, const std::string& report, const std::string& program);

}  // namespace nmt
