#pragma once
// What `gru_nmt experiment` leaves in its folder besides the runs: CSV files, the pictures
// (figures.h) and report.md, which sets the paper's numbers beside ours.
//
//   table2.csv  one row per Table 2 run (nmt::runs_csv): norm, steps, parameters, test BLEU with
//               its bootstrap mean and 95% half-width, p against LayerNorm, best dev BLEU,
//               seconds per 1000 steps and their spread, speed-up over LayerNorm
//   table5.csv  norm, statistic (mean or deviation), positions 1-4, all
//   curves.csv  every logged step of every run: figure (1 or 4), run, label, step, training
//               seconds, training loss per token and its running mean, dev loss, dev BLEU

#include <string>

#include "experiment.h"
#include "nmt/experiment_report.h"

namespace gru_nmt {

// nmt/experiment_report.h gives what the translation experiments share: the report's context,
// the speed-up over LayerNorm, running means.
using nmt::ReportContext;
using nmt::running_mean;
using nmt::speedup_over_layernorm;

void write_table2_csv(const std::string& path, const ExperimentResults& results);
void write_table5_csv(const std::string& path, const ExperimentResults& results);
void write_curves_csv(const std::string& path, const ExperimentResults& results);

// report.md: Table 2, Figure 1, Table 5 and Figure 4, ours beside the paper's.
std::string report_markdown(const ExperimentResults& results, const ReportContext& context);

}  // namespace gru_nmt
