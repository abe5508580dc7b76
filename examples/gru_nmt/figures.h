#pragma once
// The experiment's pictures, drawn by gnuplot from curves.csv (report.h) with the script
// figures.gp written beside it:
//
//   figure1.png  three panels, every Table 2 run on each: training loss (running mean) against
//                steps, the same against training seconds, dev BLEU against steps
//   figure4.png  the runs from weights centred at 0.2: dev BLEU and training loss against steps
//
// (".svg" where gnuplot has no png terminal.)

#include <string>
#include <vector>

#include "experiment.h"
#include "nmt/experiment_figures.h"

namespace gru_nmt {

// The gnuplot script for `terminal` (pngcairo, png or svg), reading curves.csv.
std::string figures_script(const ExperimentResults& results, const std::string& terminal);

// The image names the script draws.
std::vector<std::string> figure_files(const ExperimentResults& results,
                                      const std::string& terminal);

using nmt::FiguresOutcome;  // the pictures drawn, or why none were

// Writes figures.gp into `folder` (which holds curves.csv) and runs gnuplot on it; without
// gnuplot, draws nothing and says so.
FiguresOutcome draw_figures(const std::string& folder, const ExperimentResults& results);

}  // namespace gru_nmt
