#pragma once
// What a translation experiment does around its models: the paper's comparisons train one model
// folder per norm from one corpus, one tokenizer and one seed, then translate the same test
// sentences with each and set their BLEU scores against LayerNorm's. gru_nmt's and
// transformer_nmt's `experiment` differ only in their models and tables; this is the rest.
//
//   check_experiment_corpus  the six files of a corpus folder (scripts/build_corpus)
//   shared_tokenizer         one sentencepiece model for every run, trained once
//   load_test_set            the first N test pairs
//   prepare_experiment       the runs' folder, the tokenizer and the test set
//   set_run_budget           a run's training settings: the corpus, its steps, no early stop
//   experiment_sweep         the runs of a list of norms (common/norm_sweep.h), checked first
//   train_and_measure        a run trained (or continued), the machine's load beside it, its log
//   score_test_translations  a run's test translations written and scored
//   compare_with_layernorm   bootstrap intervals, and p-values against LayerNorm

#include <normgrad/normgrad.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <ostream>
#include <string>
#include <vector>

#include "common/norm_sweep.h"
#include "nmt/evaluation.h"
#include "nmt/train_log.h"
#include "nmt/training_run.h"
#include "text/corpus_metric.h"
#include "text/subword_tokenizer.h"

namespace nmt {

struct ExperimentBudget {
  std::string name;                 // "tiny", "demo", "long" or "paper", for the report
  std::int64_t steps = 0;           // each run's
  std::int64_t dev_loss_every = 0;  // steps between dev losses
  std::int64_t dev_bleu_every = 0;  // steps between dev BLEUs (greedy)
  std::int64_t test_sentences = 0;  // the first N lines of the test set (0: all)
};

// An Error unless every interval and step count is positive.
void check_budget(const ExperimentBudget& budget, const std::string& program);

// One trained model of an experiment, as its report needs it.
struct RunResult {
  std::string label;  // the norm spec, or the spec and what else sets the run apart
  std::string norm;
  std::string folder;
  std::vector<LogRow> log;
  std::int64_t steps = 0;
  std::int64_t parameters = 0;
  double best_dev_bleu = -1;
  double seconds_per_1000_steps = 0;  // 1000 x the median step
  double step_seconds_spread = 0;     // 1000 x half the distance between the quartiles
  // The share of the machine's CPU time that other processes took while this run trained
  // (common/cpu_share.h), kept in the run's folder as experiment.json; -1: unknown.
  double other_processes_cpu = -1;
  double test_bleu = -1;                              // from the best weights by dev BLEU
  double test_bleu_mean = 0, test_bleu_interval = 0;  // bootstrap mean and 95% half-width
  double p_against_layernorm = -1;                    // -1: not computed (it is LayerNorm)
};

// "<corpus>/<name>", e.g. corpus_file(corpus, "test.de").
std::string corpus_file(const std::string& corpus, const std::string& name);

// An Error naming the first of train, dev and test .en/.de missing from the folder.
void check_experiment_corpus(const std::string& corpus, const std::string& program);

// "prmsnorm:0.0625, pre-norm" -> "prmsnorm-0.0625-pre-norm": a folder name from a norm spec or
// a run's label.
std::string folder_name(const std::string& spec);

// <out>/tokenizer.model, trained on the corpus's training text the first time and loaded after
// (an Error if that one has another vocabulary size). Returns its path.
std::string shared_tokenizer(const std::string& out, const std::string& corpus,
                             std::int64_t vocabulary_size, const std::string& program,
                             std::ostream* messages);

struct TestSet {
  std::vector<std::string> sources, references;
};

// test.en and test.de's first `limit` lines (0: all); an Error if their lengths differ.
TestSet load_test_set(const std::string& corpus, std::int64_t limit, const std::string& program);

// `path` made absolute and normal (unchanged where that fails).
std::string absolute_path(const std::string& path);

// What every run of an experiment shares: the tokenizer, the test set, the BLEU signature.
struct ExperimentInputs {
  std::string tokenizer;  // its path
  TestSet test;
  std::string bleu_signature;  // sacreBLEU's, of the test BLEU
};

// Creates <out>/runs, then the shared tokenizer (shared_tokenizer) and the test set's first
// `test_sentences` pairs (load_test_set).
ExperimentInputs prepare_experiment(const std::string& out, const std::string& corpus,
                                    std::int64_t vocabulary_size, std::int64_t test_sentences,
                                    const std::string& program, std::ostream* messages);

// Sets a run's corpus (absolute paths) and budget in its training settings, which name these
// fields alike in every example: `steps` steps, dev loss and greedy dev BLEU at the budget's
// intervals (and at the last step), no early stopping (every run takes the same steps), and
// one training state kept, written four times a run. `budget` is an ExperimentBudget, or a
// program's budget with the same dev intervals.
template <class TrainingSettings, class Budget>
void set_run_budget(TrainingSettings& t, const std::string& corpus, const Budget& budget,
                    std::int64_t steps) {
  t.train_source = corpus_file(corpus, "train.en");
  t.train_target = corpus_file(corpus, "train.de");
  t.dev_source = corpus_file(corpus, "dev.en");
  t.dev_target = corpus_file(corpus, "dev.de");
  t.max_steps = steps;
  t.max_seconds = 0;
  t.dev_loss_every = std::min(budget.dev_loss_every, steps);
  t.dev_bleu_every = std::min(budget.dev_bleu_every, steps);
  t.dev_beam = 1;
  t.patience = 0;
  t.checkpoint_every = std::max<std::int64_t>(1, steps / 4);
  t.keep_checkpoints = 1;
  for (std::string* path : {&t.train_source, &t.train_target, &t.dev_source, &t.dev_target})
    *path = absolute_path(*path);
}

// Runs `train`, which trains run.folder's run (or continues it, or finds it finished), while
// measuring the CPU share other processes took, kept in experiment.json when it took steps;
// then fills `run` from the folder: its log, steps, best dev BLEU, step times and that share.
void train_and_measure(RunResult& run, const std::function<TrainSummary()>& train,
                       const std::string& program);

// A run's folder, checked before the run trains: when it holds a run, that run's settings
// must be `settings`, its budget aside (a run may be continued to more steps); else an Error.
// Returns whether the folder holds a run.
template <class Folder, class Settings>
bool check_experiment_folder(const std::string& path, const Settings& settings,
                             const std::string& program) {
  const Folder folder(path);
  if (!folder.has_config()) return false;
  std::string fingerprint;
  Settings found = folder.read_config(&fingerprint);
  found.training.max_steps = settings.training.max_steps;
  NG_CHECK(to_json(found) == to_json(settings), program, path,
           " holds a run of other settings; remove it or choose another --out");
  return true;
}

// An experiment's runs of `norms` (examples::NormSweep), in <out>/runs, with `variant` after
// each norm in their labels; every folder is checked against `settings_of(norm)` before the
// first run trains (check_experiment_folder).
template <class Folder, class SettingsOf>
examples::NormSweep experiment_sweep(const std::string& out, const std::vector<std::string>& norms,
                                     const std::string& variant, const SettingsOf& settings_of,
                                     const std::string& program) {
  return {.program = program,
          .out = (std::filesystem::path(out) / "runs").string(),
          .norms = norms,
          .variant = variant,
          .check = [settings_of, program](const examples::SweepRun& run) {
            check_experiment_folder<Folder>(run.folder, settings_of(run.norm), program);
          }};
}

// Trains one run of an experiment's sweep with a program's `train(TrainOptions)`: a new folder
// starts from `settings` with the experiment's tokenizer; a folder that holds a run is
// continued to `settings`' steps, or taken as it is when it has them, but only when its
// settings are these (check_experiment_folder). Then train_and_measure, whose result it
// returns.
template <class Folder, class Settings, class TrainOptions, class Train>
RunResult train_experiment_run(const examples::SweepRun& sweep_run, const Settings& settings,
                               TrainOptions options, const std::string& tokenizer,
                               const Train& train, const std::string& program) {
  RunResult run;
  run.label = sweep_run.label;
  run.norm = sweep_run.norm;
  run.folder = sweep_run.folder;
  options.folder = run.folder;
  options.settings = settings;
  if (check_experiment_folder<Folder>(run.folder, settings, program)) {
    options.resume = true;
    options.resume_max_steps = settings.training.max_steps;
  } else {
    options.tokenizer = tokenizer;
  }
  train_and_measure(
      run, [&] { return train(options); }, program);
  return run;
}

// Tests a run's model: counts its parameters into run.parameters, translates the test sources
// (encoded with `tokenizer`) with `translate`, and scores them (score_test_translations).
std::vector<normgrad::text::MetricStatistics> test_experiment_run(
    RunResult& run, const normgrad::nn::Module& model,
    const normgrad::text::SubwordTokenizer& tokenizer, const TestSet& test,
    const SentenceTranslator& translate, const std::string& program);

// Writes `translations` to test.hyp in the run's folder, sets run.test_bleu, and returns the
// segment statistics that compare_with_layernorm resamples.
std::vector<normgrad::text::MetricStatistics> score_test_translations(
    RunResult& run, const std::vector<std::string>& translations,
    const std::vector<std::string>& references, const std::string& program);

// Each run's bootstrap mean and interval, and its paired-bootstrap p-value against the
// LayerNorm run (when there is one). statistics[i] belongs to runs[i].
void compare_with_layernorm(
    std::vector<RunResult>& runs,
    const std::vector<std::vector<normgrad::text::MetricStatistics>>& statistics);

}  // namespace nmt
