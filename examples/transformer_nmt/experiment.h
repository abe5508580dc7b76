#pragma once
// transformer_nmt experiment: the RMSNorm paper's Transformer comparison (Table 4), run end to
// end on one corpus.
//
//   Table 4   every norm of `norms` in the post-norm Transformer (the paper's), trained for the
//             same steps from the same seed, the same batches and (the norms add only gains
//             and biases) the same initial weights: test BLEU with beam search, its bootstrap
//             95% interval and the paired-bootstrap p-value against LayerNorm, the best dev
//             BLEU, seconds per 1000 training steps and the speed-up over LayerNorm. The paper
//             reports that the Transformer without a norm fails to train; the report says of
//             every run whether its loss fell.
//   curves    each run's training loss against steps and against training seconds, and its dev
//             BLEU against steps, for the post-norm runs and for the pre-norm ones
//   pre-norm  the norms of `pre_norms` in the pre-norm Transformer, compared among themselves
//
// A budget shorter than four times the preset's warm-up cuts the warm-up to a quarter of its
// steps, so that every run reaches the peak learning rate.
//
// Each run is an ordinary model folder under <out>/runs/ (translate, score and average work on
// it); a folder that already holds a run is continued, or taken as it is when it reached its
// budget, so an interrupted experiment goes on where it stopped. The runs share one tokenizer,
// trained once. report.h writes what comes out.

#include <normgrad/normgrad.h>

#include <cstdint>
#include <string>
#include <vector>

#include "nmt/experiment_runs.h"
#include "program.h"

namespace transformer_nmt {

using nmt::RunResult;  // one trained model: its folder, log, timings and test BLEU

// "demo": about 8 minutes on 2 cores with the small preset; "long": about 90.
std::vector<nmt::ExperimentBudget> experiment_budgets();  // in the order `--budget` lists them
nmt::ExperimentBudget experiment_budget(const std::string& name);

struct ExperimentOptions : nmt::ExperimentOptions<Program> {
  // The base settings' norm and placement are set per run, the norms are Table 4's.
  ExperimentOptions() {
    norms = {"none", "layernorm", "rmsnorm", "prmsnorm:0.0625"};
    beam = 4;
  }
  std::vector<std::string> pre_norms{"layernorm", "rmsnorm"};  // trained pre-norm as well
};

struct ExperimentResults : nmt::ExperimentResults {
  std::vector<RunResult> table4;    // post-norm, one run per norm
  std::vector<RunResult> pre_norm;  // labelled "<norm>, pre-norm"
};

// The settings every run shares (its norm and placement aside): the base settings with the
// corpus, the budget and the experiment's fixed choices (no early stopping, greedy dev BLEU).
Settings shared_run_settings(const ExperimentOptions& options);

// The checks done before any training: the corpus files, the budget, every norm, the beam.
void check_experiment(const ExperimentOptions& options);

ExperimentResults run_experiment(const ExperimentOptions& options);

}  // namespace transformer_nmt
