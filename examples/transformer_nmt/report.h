#pragma once
// What `transformer_nmt experiment` leaves in its folder besides the runs: CSV files, the
// pictures and report.md, which sets the paper's numbers beside ours.
//
//   table4.csv    one row per post-norm run (nmt::runs_csv)
//   pre_norm.csv  the same for the pre-norm runs
//   curves.csv    every logged step of every run (nmt::curves_csv): figure 1 the post-norm
//                 runs, figure 2 the pre-norm ones
//   post_norm.png, pre_norm.png  training loss against steps and against seconds, dev BLEU
//                 against steps (nmt::training_panels), drawn by gnuplot from figures.gp

#include <string>
#include <vector>

#include "experiment.h"
#include "nmt/experiment_figures.h"
#include "nmt/experiment_report.h"

namespace transformer_nmt {

// Writes table4.csv, pre_norm.csv and curves.csv into `folder`.
void write_experiment_csv(const std::string& folder, const ExperimentResults& results);

// The gnuplot script for `terminal` (pngcairo, png or svg), reading curves.csv, and the
// pictures it draws.
nmt::FigureScript figures_script(const ExperimentResults& results, const std::string& terminal);

// report.md: Table 4 beside the paper's, the training curves and whether each run trained,
// and the pre-norm runs.
std::string report_markdown(const ExperimentResults& results, const nmt::ReportContext& context);

}  // namespace transformer_nmt
