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

#include "local_task.h"
#include "model_folder.h"
#include "timing.h"
#include "training.h"

namespace attentive_reader {

// The sizes of an experiment: tiny (seconds, for checks), demo, long, or paper (the paper's
// sizes and steps, for the CNN corpus on a GPU).
struct Budget {
  std::string name;
  std::int64_t dim = 240, steps = 0, valid_every = 1000, batch_size = 64;
  double learning_rate = 8e-5, dropout = 0.5;
  std::string answers = "vocabulary";
  std::int64_t training_questions = 0, validation_questions = 0;
  // The local task's documents, in segments of the corpus (when built by the experiment).
  std::int64_t document_segments = 4;
  // CPU threads when --threads does not say (0: every core). At 64 units a step's products are
  // too small to share: one thread took 21-27 s for 300 LayerNorm steps where two took 37-38.
  int threads = 0;
  // The training step timed at these sizes after the runs (Table 6 proper), if at all.
  std::optional<TimingSettings> timing;
};
Budget budget_named(const std::string& name);  // an Error for another name

// The paper's rows of Table 6 that apply to the reader's LSTMs, in its order.
std::vector<std::string> paper_norms();

struct ExperimentRun {
  std::string norm;
  std::vector<ValidationRecord> history;
  Evaluation test;
  std::optional<double> other_cpu;
};

struct ExperimentSettings {
  std::vector<std::string> norms = paper_norms();
  RunConfig base{};  // everything but the norm
  std::string out = "out/attentive_reader";
  std::string budget;
  std::optional<TimingSettings> timing;  // the norms' steps timed after the runs, if given
};

std::vector<ExperimentRun> run_experiment(const ExperimentSettings& settings,
                                          normgrad::Device device, bool progress_bar);

std::string table_markdown(const std::vector<ExperimentRun>& runs);

}  // namespace attentive_reader
