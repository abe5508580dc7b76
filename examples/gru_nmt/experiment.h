#pragma once
// gru_nmt experiment: the RMSNorm paper's RNNSearch comparisons, run end to end on one corpus.
//
//   Table 2   every norm of `norms` trained for the same steps from the same seed, the same
//             batches and (the norms add only gains and biases) the same initial weights; test
//             BLEU with beam search, its bootstrap 95% interval and the paired-bootstrap p-value
//             against LayerNorm; the best dev BLEU; seconds per 1000 training steps (the median
//             measured step, times 1000) and the speed-up over LayerNorm, (T_LN - T) / T_LN.
//   Figure 1  each run's training loss against steps and against training seconds, and its dev
//             BLEU against steps (the runs' train.csv).
//   Table 5   mean and deviation of the decoder GRU's U h on the dev set at target positions 1-4
//             and over all positions, for the Table 2 runs of none, layernorm and rmsnorm.
//   Figure 4  LayerNorm and RMSNorm from weights whose mean is shifted to init_center 0.2, dev BLEU
//             against steps, over a longer budget.
//
// Each run is an ordinary model folder under <out>/runs/ (translate and score work on it); a
// folder that already holds a run is resumed, or taken as it is when it reached its budget, so
// an interrupted experiment continues where it stopped. The runs share one tokenizer, trained
// once. report.h writes what comes out.

#include <normgrad/normgrad.h>

#include <cstdint>
#include <string>
#include <vector>

#include "analysis.h"
#include "nmt/experiment_runs.h"
#include "program.h"

namespace gru_nmt {

using nmt::ExperimentBudget;  // its figure4_steps are the Figure 4 runs'

// "demo": about 12 minutes on 2 cores with the small preset; "long": about 45.
std::vector<ExperimentBudget> experiment_budgets();  // in the order `--budget` lists them
ExperimentBudget experiment_budget(const std::string& name);

struct ExperimentOptions : nmt::ExperimentOptions<Program> {
  // The base settings' norm and init_center are set per run, the beam is 5, the norms Table 2's.
  ExperimentOptions() { norms = {"none", "layernorm", "l2norm", "rmsnorm", "prmsnorm:0.0625"}; }
  bool figure4 = true;
};

using nmt::LogRow;     // one row of a run's train.csv
using nmt::RunResult;  // one trained model: its folder, log, timings and test BLEU

struct Table5Row {
  std::string norm;
  PreactivationStatistics statistics;
};

struct ExperimentResults : nmt::ExperimentResults {
  std::vector<RunResult> table2;
  std::vector<RunResult> figure4;
  std::vector<Table5Row> table5;
};

// The settings every Table 2 run shares (its norm aside): the base settings with the corpus,
// the budget and the experiment's fixed choices (no early stopping, greedy dev BLEU).
Settings shared_run_settings(const ExperimentOptions& options);

// The checks done before any training: the corpus files, the budgets, every norm, the beam.
void check_experiment(const ExperimentOptions& options);

ExperimentResults run_experiment(const ExperimentOptions& options);

}  // namespace gru_nmt
