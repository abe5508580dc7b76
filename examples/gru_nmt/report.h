#pragma once
// What `gru_nmt experiment` leaves in its folder besides the runs: CSV files, the pictures
// (figures.h) and report.md, which sets the paper's numbers beside ours.
//
//   table2.csv  one row per Table 2 run: norm, steps, parameters, test BLEU with its bootstrap
//               mean and 95% half-width, p against LayerNorm, best dev BLEU, seconds per 1000
//               steps and their spread, speed-up over LayerNorm
//   table5.csv  norm, statistic (mean or deviation), positions 1-4, all
//   curves.csv  every logged step of every run: figure (1 or 4), run, label, step, training
//               seconds, training loss per token and its running mean, dev loss, dev BLEU

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "experiment.h"

namespace gru_nmt {

// (T_LN - T) / T_LN in percent, the paper's speed-up of a run over LayerNorm; nullopt without a
// LayerNorm run among `runs`.
std::optional<double> speedup_over_layernorm(const std::vector<RunResult>& runs,
                                             const RunResult& run);

// The mean of each window of `window` losses ending at a row (fewer at the start): the
// training loss is per batch and noisy, the curves show its trend.
std::vector<double> running_mean(const std::vector<LogRow>& log, std::size_t window);

void write_table2_csv(const std::string& path, const ExperimentResults& results);
void write_table5_csv(const std::string& path, const ExperimentResults& results);
void write_curves_csv(const std::string& path, const ExperimentResults& results);

struct ReportContext {
  std::string date;                  // "2026-11-25"
  std::string machine;               // CPU model and threads, or the GPU
  std::string corpus;                // the corpus folder
  std::string settings;              // the base settings, as describe() prints them
  std::vector<std::string> figures;  // image files drawn, relative to the report's folder
};

// report.md: Table 2, Figure 1, Table 5 and Figure 4, ours beside the paper's.
std::string report_markdown(const ExperimentResults& results, const ReportContext& context);

}  // namespace gru_nmt
