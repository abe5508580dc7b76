#pragma once
// `order_embedding experiment`: the paper's Table 7 in shape. Every normaliser trains the same
// model from the same seed (the same initial weights where the shapes agree, the same batches)
// on the same data, each in its own model folder under the experiment's folder (a second run
// takes finished runs as they are and continues unfinished ones); then each run's best weights
// retrieve on the test split in folds of 1000 images. Written:
//
//   table7.csv    one row per norm: test R@1/5/10 and mean rank both ways, the test images
//                 and captions, the best step, seconds per 100 steps and the spread of the
//                 intervals between validations, the saving over LayerNorm, other processes'
//                 CPU share
//   curves.csv    every validation of every run: norm, step, seconds, loss, dev retrieval
//   curves.gp, validation.png   dev image retrieval R@1 and R@10 against steps (Figure 6)
//   table8_paper_sizes.csv   when the budget times them: each norm's training step at the
//                 paper's sizes (timing.h; the tiny budget's are small), seconds per 100 steps
//                 and the range of the steps over their median
//   report.md     the tables beside the paper's, and the figure

#include <optional>
#include <string>
#include <vector>

#include "common/norm_experiment.h"
#include "model_folder.h"
#include "proxy_data.h"
#include "timing.h"
#include "training.h"

namespace order_embedding {

// The sizes of an experiment (examples/common/budget.h): tiny (seconds, for checks), demo (GRU
// 256, about 8 minutes on 2 cores), long (GRU 512) or paper (the paper's sizes, for COCO on a
// GPU).
struct Budget {
  std::string name;
  RunConfig run;  // every run's settings but the norm, the seed and the data folder
  std::int64_t test_images = 0, fold_images = 1000;
  ProxySettings local_task{};  // how `--corpus` builds the local task (corpus and out aside)
  std::optional<TimingSettings> timing;  // the step timed at these sizes after the runs (Table 8)
};
std::vector<Budget> budgets();                 // in the order `--budget` lists them
Budget budget_named(const std::string& name);  // an Error for another name

// The paper's four models, in its order.
std::vector<std::string> paper_norms();

// A run's test retrieval is that of its best validation's weights.
using ExperimentRun = examples::NormRun<ValidationRecord, normgrad::data::RetrievalScores>;

struct ExperimentSettings {
  std::vector<std::string> norms = paper_norms();
  std::string out = "out/order_embedding";
  Budget budget;  // its run, every run's settings but the norm, with the seed and the data's
};

// Trains every run (or takes it as it is), evaluates, then writes the CSV files, the figure
// and the report; prints the table. A folder that holds another run is an Error before any
// training.
std::vector<ExperimentRun> run_experiment(const ExperimentSettings& settings,
                                          normgrad::Device device, bool progress_bar);

std::string table_markdown(const std::vector<ExperimentRun>& runs);

}  // namespace order_embedding
