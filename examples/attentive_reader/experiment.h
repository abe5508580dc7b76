#pragma once
// `attentive_reader experiment`: the paper's Table 6 and Figure 5 in shape. Every normaliser
// trains the same reader from the same seed on the same batches, each in its own model folder
// under the experiment's folder (a second run takes finished runs as they are and continues
// unfinished ones); then each run's best weights answer the test questions. Written:
//
//   table6.csv    one row per norm: the lowest validation error and its step, the test error
//                 and the test questions, seconds per 100 steps and the spread of the
//                 intervals between validations, the saving over LayerNorm, other processes'
//                 CPU share, and the test errors of answering without reading (baselines.h)
//   curves.csv    every validation of every run: norm, step, seconds, training loss and error,
//                 validation error and loss
//   curves.gp, validation.png   validation error against steps (the paper's Figure 5), with
//                 the most frequent entity's error
//   table6_paper_sizes.csv   when the budget times them: each norm's training step at the
//                 paper's sizes (timing.h; the tiny budget's are small), seconds per 100 steps
//                 and the range of the steps over their median
//   report.md     the tables beside the paper's, and the figure

#include <optional>
#include <string>
#include <vector>

#include "common/norm_experiment.h"
#include "local_task.h"
#include "model_folder.h"
#include "timing.h"
#include "training.h"

namespace attentive_reader {

// The sizes of an experiment (examples/common/budget.h): tiny (seconds, for checks), demo, long,
// or paper (the paper's sizes and steps, for the CNN corpus on a GPU).
struct Budget {
  std::string name;
  RunConfig run;  // every run's settings but the norm, the seed and the data folder
  // The local task's documents, in segments of the corpus (when built by the experiment).
  std::int64_t document_segments = 4;
  // CPU threads when --threads does not say (0: every core). At 64 units a step's products are
  // too small to share: one thread took 21-27 s for 300 LayerNorm steps where two took 37-38.
  int threads = 0;
  // The training step timed at these sizes after the runs (Table 6 proper), if at all.
  std::optional<TimingSettings> timing;
};
std::vector<Budget> budgets();                 // in the order `--budget` lists them
Budget budget_named(const std::string& name);  // an Error for another name

// The paper's rows of Table 6 that apply to the reader's LSTMs, in its order.
std::vector<std::string> paper_norms();

using ExperimentRun = examples::NormRun<ValidationRecord, Evaluation>;

struct ExperimentSettings {
  std::vector<std::string> norms = paper_norms();
  std::string out = "out/attentive_reader";
  Budget budget;  // its run, every run's settings but the norm, with the seed and the data's
};

std::vector<ExperimentRun> run_experiment(const ExperimentSettings& settings,
                                          normgrad::Device device, bool progress_bar);

std::string table_markdown(const std::vector<ExperimentRun>& runs);

}  // namespace attentive_reader
