#pragma once
// A translation experiment's pictures, drawn by gnuplot from curves.csv (experiment_report.h)
// with a script written beside it (figures.gp), which the user can rerun or restyle. Each
// program composes its figures from these pieces:
//
//   training_panels  one picture, three panels, every run of a group on each: training loss
//                    (running mean) against steps, the same against training seconds, and dev
//                    BLEU against steps
//   plot_command     one panel: a column of curves.csv against another, a line per run
//
// ".svg" pictures where gnuplot has no png terminal; none, and a message, without gnuplot.

#include <functional>
#include <string>
#include <vector>

#include "common/gnuplot.h"
#include "nmt/experiment_runs.h"

namespace nmt {

// curves.csv's columns, as gnuplot numbers them.
enum CurveColumn { step_column = 4, seconds_column = 5, loss_mean_column = 7, dev_bleu_column = 9 };

// The kit's figure pieces (common/gnuplot.h): image_file ("figure1.png", or "figure1.svg" for
// the svg terminal), a script and its pictures, and what drawing them gave.
using examples::FigureScript;
using examples::FiguresOutcome;
using examples::image_file;

// The `set terminal` line for pngcairo, png or svg at a size in pixels.
std::string terminal_line(const std::string& terminal, int width, int height);

// A `plot` of column y against column x, one curve per run of `runs`, numbered in curves.csv
// from `first_run`; `measured_only` keeps the rows where y was measured (the dev columns).
std::string plot_command(const std::vector<RunResult>& runs, int first_run, CurveColumn x,
                         CurveColumn y, bool measured_only, const char* style);

// The three panels of training loss and dev BLEU (above) into `file`, titled `title`.
std::string training_panels(const std::string& terminal, const std::string& file,
                            const std::string& title, const std::vector<RunResult>& runs,
                            int first_run);

}  // namespace nmt
