#pragma once
// What a translation experiment does around its models: the paper's comparisons train one model
// folder per norm from one corpus, one tokenizer and one seed, then translate the same test
// sentences with each and set their BLEU scores against LayerNorm's. gru_nmt's and
// transformer_nmt's `experiment` differ only in their models, their groups of runs and their
// tables; this is the rest.
//
//   ExperimentBudget         a named budget: steps, dev intervals, test sentences
//   ExperimentOptions        what `experiment` is asked to do, checked by check_experiment_options
//   prepare_experiment       the runs' folder, one tokenizer for every run, the test set
//   set_run_budget           a run's training settings: the corpus, its steps, no early stop
//   run_norm_group           the runs of a list of norms (common/norm_sweep.h), every folder
//                            checked first, each trained (or continued, or taken as it is)
//                            with the machine's load measured beside it, then tested and
//                            compared with LayerNorm

#include <normgrad/normgrad.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <initializer_list>
#include <ostream>
#include <string>
#include <vector>

#include "common/budget.h"
#include "common/norm_sweep.h"
#include "nmt/evaluation.h"
#include "nmt/program.h"
#include "nmt/train_log.h"
#include "nmt/training_run.h"
#include "text/corpus_metric.h"
#include "text/subword_tokenizer.h"

namespace nmt {

struct ExperimentBudget {
  std::string name;                 // "tiny", "demo", "long" or "paper", for the report
  std::int64_t steps = 0;           // each run's
  std::int64_t figure4_steps = 0;   // each of gru_nmt's Figure 4 runs; 0 elsewhere
  std::int64_t dev_loss_every = 0;  // steps between dev losses
  std::int64_t dev_bleu_every = 0;  // steps between dev BLEUs (greedy)
  std::int64_t test_sentences = 0;  // the first N lines of the test set (0: all)
};

// What an `experiment` is asked to do, for a Program (nmt/program.h); each program's options add
// its own runs' choices and set its defaults.
template <class P> struct ExperimentOptions {
  using Program = P;
  using Settings = typename Program::Settings;
  std::string corpus;  // a folder with train, dev and test .en/.de (scripts/build_corpus)
  std::string out;     // where runs/, the CSV files, the plots and report.md go
  ExperimentBudget budget{};
  Settings settings{};  // the base of every run; its norm (and what else sets a run apart) per run
  std::vector<std::string> norms{};
  std::int64_t beam = 5;  // for test BLEU
  normgrad::Device device = normgrad::Device::cpu();
  std::ostream* messages = nullptr;
};

// An Error unless every interval and step count is positive (Figure 4's too, when `figure4`).
void check_budget(const ExperimentBudget& budget, bool figure4, const std::string& program);

// "<corpus>/<name>", e.g. corpus_file(corpus, "test.de").
std::string corpus_file(const std::string& corpus, const std::string& name);

// An Error naming the first of train, dev and test .en/.de missing from the folder.
void check_experiment_corpus(const std::string& corpus, const std::string& program);

// The checks done before any training: the corpus folder, the budget (with Figure 4's steps
// when `figure4`), a norm at least, every norm of the options and of `more_norms` as a run's
// settings (`check` of the settings' namespace: an Error for an unknown or unfitting norm),
// and the beam.
template <class Program>
void check_experiment_options(const ExperimentOptions<Program>& options,
                              const std::vector<std::string>& more_norms, bool figure4,
                              const std::string& program) {
  check_experiment_corpus(options.corpus, program);
  check_budget(options.budget, figure4, program);
  NG_CHECK(!options.norms.empty(), program, "no norms to compare");
  for (const auto* norms : {&options.norms, &more_norms})
    for (const auto& norm : *norms) check(examples::with_norm(options.settings, norm));
  NG_CHECK(options.beam > 0, program, "the beam must be positive, got ", options.beam);
}

// "per run: none, layernorm, ...": the norm of the settings every run shares, for the report.
std::string norms_per_run(const std::vector<std::string>& norms);

// One trained model of an experiment, as its report needs it.
struct RunResult {
  std::string label;  // the norm spec, or the spec and what else sets the run apart
  std::string norm;
  std::string folder;
  std::vector<LogRow> log{};
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

// What every experiment's results hold besides its runs.
struct ExperimentResults {
  ExperimentBudget budget;
  std::string bleu_signature;  // sacreBLEU's, of the test BLEU
  std::int64_t test_sentences = 0;
  double total_seconds = 0;
};

struct TestSet {
  std::vector<std::string> sources, references;
};

// test.en and test.de's first `limit` lines (0: all); an Error if their lengths differ.
TestSet load_test_set(const std::string& corpus, std::int64_t limit, const std::string& program);

// What every run of an experiment shares: the tokenizer and the test set.
struct ExperimentInputs {
  std::string tokenizer;  // its path
  TestSet test;
};

// Creates <out>/runs, then <out>/tokenizer.model, trained on the corpus's training text the first
// time and loaded after (an Error if that one has another vocabulary size), and the test set's
// first budget.test_sentences pairs. `results` gets the budget, the test set's size and the BLEU
// signature.
ExperimentInputs prepare_experiment(const std::string& out, const std::string& corpus,
                                    std::int64_t vocabulary_size, const ExperimentBudget& budget,
                                    ExperimentResults& results, const std::string& program,
                                    std::ostream* messages);

// Sets a run's corpus (absolute paths) and budget in its training settings: `steps` steps, dev
// loss and greedy dev BLEU at the budget's intervals (and at the last step), no early stopping
// (every run takes the same steps), and one training state kept, written four times a run.
void set_run_budget(TrainingSettings& t, const std::string& corpus, const ExperimentBudget& budget,
                    std::int64_t steps);

// Runs `train`, which trains run.folder's run (or continues it, or finds it finished), while
// measuring the CPU share other processes took, kept in experiment.json when it took steps;
// then fills `run` from the folder: its log, steps, best dev BLEU, step times and that share.
void train_and_measure(RunResult& run, const std::function<TrainSummary()>& train,
                       const std::string& program);

// Whether the folder at `path` holds a run; when it does, that run's settings must be
// `settings`, its budget aside (a run may be continued to more steps), else an Error.
template <class Program>
bool check_experiment_folder(const std::string& path, const typename Program::Settings& settings,
                             const std::string& program) {
  const ProgramFolder<Program> folder(path);
  if (!folder.has_config()) return false;
  auto found = folder.read_config(nullptr);
  found.training.max_steps = settings.training.max_steps;
  NG_CHECK(settings_json(found) == settings_json(settings), program, path,
           " holds a run of other settings; remove it or choose another --out");
  return true;
}

// Tests a run's model: counts its parameters into run.parameters, translates the test sources
// (encoded with `tokenizer`) with `translate`, writes them to test.hyp in the run's folder and
// sets run.test_bleu; returns the segment statistics that compare_with_layernorm resamples.
std::vector<normgrad::text::MetricStatistics> test_experiment_run(
    RunResult& run, const normgrad::nn::Module& model,
    const normgrad::text::SubwordTokenizer& tokenizer, const TestSet& test,
    const SentenceTranslator& translate, const std::string& program);

// Each run's bootstrap mean and interval, and its paired-bootstrap p-value against the
// LayerNorm run (when there is one). statistics[i] belongs to runs[i].
void compare_with_layernorm(
    std::vector<RunResult>& runs,
    const std::vector<std::vector<normgrad::text::MetricStatistics>>& statistics);

// Where an experiment says what it does: "== <title>, run 2 of 5: rmsnorm, 600 steps".
void announce(const examples::SweepRun& run, const std::string& title, std::int64_t steps,
              std::ostream* messages);

// The runs of `norms` (examples::NormSweep) in <out>/runs, each labelled its norm and
// `variant`, each folder checked against settings_of(norm) before the first run trains. A new
// folder starts with the experiment's tokenizer; a folder that holds a run is continued to its
// settings' steps, or taken as it is when it has them. With `test`, each run translates the
// test set with beam search from its best weights, and the runs are compared with LayerNorm.
template <class Program, class SettingsOf>
std::vector<RunResult> run_norm_group(const ExperimentOptions<Program>& options,
                                      const ExperimentInputs& inputs,
                                      const std::vector<std::string>& norms,
                                      const std::string& variant, const std::string& title,
                                      const SettingsOf& settings_of, bool test) {
  const std::string program = std::string(Program::name) + " experiment";
  examples::NormSweep sweep{
      .program = program,
      .out = (std::filesystem::path(options.out) / "runs").string(),
      .norms = norms,
      .variant = variant,
      .check =
          [&](const examples::SweepRun& run) {
            check_experiment_folder<Program>(run.folder, settings_of(run.norm), program);
          },
      .announce =
          [&](const examples::SweepRun& run) {
            announce(run, title, settings_of(run.norm).training.max_steps, options.messages);
          }};
  std::vector<std::vector<normgrad::text::MetricStatistics>> statistics;
  auto runs = examples::run_norm_sweep(sweep, [&](const examples::SweepRun& sweep_run) {
    RunResult run{.label = sweep_run.label, .norm = sweep_run.norm, .folder = sweep_run.folder};
    TrainOptions<typename Program::Settings> train_options{.folder = run.folder,
                                                           .settings = settings_of(run.norm),
                                                           .device = options.device,
                                                           .messages = options.messages};
    if (check_experiment_folder<Program>(run.folder, train_options.settings, program)) {
      train_options.resume = true;
      train_options.resume_max_steps = train_options.settings.training.max_steps;
    } else {
      train_options.tokenizer = inputs.tokenizer;
    }
    train_and_measure(
        run, [&] { return train<Program>(train_options); }, program);
    if (!test) return run;
    if (options.messages != nullptr)
      *options.messages << "   test BLEU, beam " << options.beam << ", "
                        << inputs.test.sources.size() << " sentences\n"
                        << std::flush;
    normgrad::Generator generator(0);
    auto loaded = load_model_folder(ProgramFolder<Program>(run.folder), generator);
    if (!options.device.is_cpu()) loaded.model->to(options.device);
    const SentenceTranslator translate = [&](const auto& sentences) {
      return translate_sentences<Program>(*loaded.model, loaded.tokenizer, sentences,
                                          Program::search_options(options.beam, 1), 32,
                                          options.device);
    };
    statistics.push_back(
        test_experiment_run(run, *loaded.model, loaded.tokenizer, inputs.test, translate, program));
    return run;
  });
  if (test) compare_with_layernorm(runs, statistics);
  return runs;
}

}  // namespace nmt
