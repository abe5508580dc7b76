#pragma once
// `convpool_cnn_c experiment`: the paper's Table 10 in shape. Every normaliser trains the same
// model from the same seed (the same initial weights where the shapes agree, the same batches
// and noise draws) on the same data, each in its own model folder under the experiment's
// folder (a second run takes finished runs as they are and continues unfinished ones). Then:
//
//   table10.csv   one row per norm: test error (and the test images it counts) and training
//                 error after the last epoch, seconds per epoch (median over the epochs) and
//                 their spread, speed-up over LayerNorm
//   curves.csv    every epoch of every run: norm, epoch, training seconds so far, loss,
//                 training error, test error
//   curves.gp, training_error.png   training error against epochs and against seconds
//   report.md     the table beside the paper's, and the figure

#include <optional>
#include <string>
#include <vector>

#include "model_folder.h"
#include "training.h"

namespace convpool_cnn_c {

// The sizes of an experiment: tiny (seconds, for checks), demo (about 8 minutes on 2 cores),
// long (about 95), gpu (the paper's width on every image for 10 epochs, for a GPU) or paper
// (the same for the paper's 200 epochs).
struct Budget {
  std::string name;
  double width = 0;
  std::int64_t epochs = 0, train_size = 0, test_size = 0;
};
const std::vector<Budget>& budgets();          // in that order
Budget budget_named(const std::string& name);  // an Error for another name

// The paper's six models, in its order.
std::vector<std::string> paper_norms();

struct ExperimentRun {
  std::string norm;
  std::vector<EpochRecord> history;
};

struct ExperimentSettings {
  std::vector<std::string> norms = paper_norms();
  RunConfig base{};  // everything but the norm
  std::string out = "out/convpool_cnn_c";
  std::string budget;  // its name, for the report
};

// A run's folder name: the spec with its separators made '-'.
using examples::run_folder_name;

// Trains every run (or takes it as it is), then writes the CSV files, the figure and the
// report; prints the table. A folder that holds another run is an Error before any training.
std::vector<ExperimentRun> run_experiment(const ExperimentSettings& settings,
                                          normgrad::Device device, bool progress_bar);

// (T_LN - T) / T_LN in percent over the median seconds per epoch; nullopt without LayerNorm.
std::optional<double> speedup_over_layernorm(const std::vector<ExperimentRun>& runs,
                                             const ExperimentRun& run);
double median_epoch_seconds(const ExperimentRun& run);

std::string table_markdown(const std::vector<ExperimentRun>& runs);

}  // namespace convpool_cnn_c
