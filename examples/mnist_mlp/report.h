#pragma once
// What the runs leave behind: the table printed at the end, and the text of two CSV files —
// the curves (one row per curve point of every run, what the plots are drawn from) and a
// summary (one row per run). A spec with a comma, such as "prmsnorm:0.125,eps=1e-8", is
// quoted (examples::csv_field).

#include <string>
#include <vector>

#include "training.h"

namespace mnist_mlp {

// curves.csv's columns: run (its index in `results`), norm, batch_size, step, wall_seconds,
// train_loss, test_accuracy (empty except at evaluation points).
std::string curves_csv(const std::vector<RunResult>& results);

// summary.csv's columns: run, norm, batch_size, steps, parameters, train_seconds, ms_per_step,
// test_accuracy, other_processes_cpu (empty when not measured).
std::string summary_csv(const std::vector<RunResult>& results);

// A Markdown table: one row per run with its final test accuracy and milliseconds per
// training step, the time saved against LayerNorm at the same batch size when LayerNorm
// ran, (T_LayerNorm - T) / T_LayerNorm, the measure of the RMSNorm paper's tables, and the
// share of the machine that other processes took meanwhile.
std::string results_table(const std::vector<RunResult>& results);

// report.md: a title, `setup` (the data, the optimiser, the threads: one paragraph), what the
// experiment is beside the RMSNorm paper, the results table and the images (file names
// relative to the report).
std::string report_markdown(const std::vector<RunResult>& results, const std::string& setup,
                            const std::vector<std::string>& images);

}  // namespace mnist_mlp
