#pragma once
// What `gru_nmt experiment` leaves in its folder besides the runs: CSV files, the pictures and
// report.md, which sets the paper's numbers beside ours.
//
//   table2.csv   one row per Table 2 run (nmt::runs_csv): norm, steps, parameters, test BLEU with
//                its bootstrap mean and 95% half-width, p against LayerNorm, best dev BLEU,
//                seconds per 1000 steps and their spread, speed-up over LayerNorm
//   table5.csv   norm, statistic (mean or deviation), positions 1-4, all
//   curves.csv   every logged step of every run: figure (1 or 4), run, label, step, training
//                seconds, training loss per token and its running mean, dev loss, dev BLEU
//   figure1.png  three panels, every Table 2 run on each: training loss (running mean) against
//                steps, the same against training seconds, dev BLEU against steps
//   figure4.png  the runs from weights centred at 0.2: dev BLEU and training loss against steps
//
// The pictures are drawn by gnuplot from curves.csv with the script figures.gp written beside
// it (".svg" where gnuplot has no png terminal).

#include <string>

#include "experiment.h"
#include "nmt/experiment_figures.h"
#include "nmt/experiment_report.h"

namespace gru_nmt {

// Writes table2.csv, table5.csv and curves.csv into `folder`.
void write_experiment_csv(const std::string& folder, const ExperimentResults& results);

// The gnuplot script for `terminal` (pngcairo, png or svg), reading curves.csv, and the
// pictures it draws.
nmt::FigureScript figures_script(const ExperimentResults& results, const std::string& terminal);

// report.md: Table 2, Figure 1, Table 5 and Figure 4, ours beside the paper's.
std::string report_markdown(const ExperimentResults& results, const nmt::ReportContext& context);

}  // namespace gru_nmt
