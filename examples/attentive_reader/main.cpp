// attentive_reader: the RMSNorm paper's reading-comprehension experiment (its Table 6), the
// bidirectional attentive reader with the normaliser inside its LSTMs.
//
//   attentive_reader prepare --corpus out/corpus/debian-en-de --out out/ar-data
//   attentive_reader train --data out/ar-data --out out/ar/rmsnorm --norm rmsnorm
//   attentive_reader train --out out/ar/rmsnorm          # continues where that run stopped
//   attentive_reader evaluate --model out/ar/rmsnorm     # the test error
//   attentive_reader experiment --corpus out/corpus/debian-en-de --budget demo   # Table 6
//   attentive_reader time --out out/ar-time               # s per 100 steps, the paper's sizes
//
// --data takes the CNN corpus's folder (cnn/, holding questions/{training,validation,test}) or
// the folder `prepare` makes from a parallel corpus.
#include <normgrad/normgrad.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <filesystem>
#include <string>

#include "common/command_flags.h"
#include "common/device_flag.h"
#include "common/experiment_data.h"
#include "common/norm_timing.h"
#include "common/number_checks.h"
#include "common/program_error.h"
#include "common/wait_policy.h"
#include "experiment.h"
#include "local_task.h"
#include "model_folder.h"
#include "run.h"
#include "timing.h"

namespace ng = normgrad;
namespace fs = std::filesystem;
using namespace attentive_reader;

namespace {

constexpr const char* kProgram = "attentive_reader";

using CommonOptions = examples::DeviceFlags;

struct TrainOptions {
  std::string out = "out/attentive_reader/rmsnorm";
  std::string data;
  std::string norm = "rmsnorm";
  std::int64_t dim = 240;
  double dropout = 0.5;
  std::string answers = "vocabulary";
  std::int64_t steps = 100000, batch = 64, valid_every = 1000;
  std::int64_t training_questions = 0, validation_questions = 0;
  double lr = 8e-5, clip = 10;
  std::uint64_t seed = 1;
  bool no_progress = false;
};

struct EvaluateOptions {
  std::string model, data, split = "test";
  std::int64_t questions = 0;
};

bool progress_bar(bool no_progress) { return !no_progress && ::isatty(2) == 1; }

RunConfig run_from(const TrainOptions& o) {
  RunConfig run;
  run.model = {
      .norm = o.norm, .dim = o.dim, .dropout = o.dropout, .answers = o.answers, .seed = o.seed};
  run.data = {.folder = o.data.empty() ? o.data : fs::absolute(o.data).lexically_normal().string(),
              .training_questions = o.training_questions,
              .validation_questions = o.validation_questions};
  run.training = {.steps = o.steps,
                  .batch_size = o.batch,
                  .learning_rate = o.lr,
                  .clip = o.clip,
                  .valid_every = o.valid_every,
                  .seed = o.seed};
  parse_model_norm(run.model.norm);
  return run;
}

// The flags that say what run a folder holds: given for a folder with a run, they must agree.
const examples::FlagSettings run_flags{
    {"--norm", "/model/norm"_json_pointer},
    {"--dim", "/model/dim"_json_pointer},
    {"--dropout", "/model/dropout"_json_pointer},
    {"--answers", "/model/answers"_json_pointer},
    {"--seed", "/model/seed"_json_pointer},
    {"--data", "/data/folder"_json_pointer},
    {"--training-questions", "/data/training_questions"_json_pointer},
    {"--validation-questions", "/data/validation_questions"_json_pointer},
    {"--steps", "/training/steps"_json_pointer},
    {"--batch", "/training/batch_size"_json_pointer},
    {"--lr", "/training/learning_rate"_json_pointer},
    {"--clip", "/training/clip"_json_pointer},
    {"--valid-every", "/training/valid_every"_json_pointer}};

int train(const TrainOptions& o, const CommonOptions& common, const CLI::App& command) {
  const ng::Device device = examples::parse_device(common.device, kProgram);
  const ModelFolder folder(o.out);
  NG_CHECK(folder.has_config() || !o.data.empty(), kProgram, "--data is needed to start a run in '",
           o.out, "'");
  const RunConfig run = examples::run_to_train(
      folder, run_from(o), run_flags, [&](const char* flag) { return command.count(flag) > 0; });
  if (common.threads > 0) ng::set_num_threads(common.threads);
  train_in_folder(folder, run, device, progress_bar(o.no_progress), stdout);
  return 0;
}

int evaluate(const EvaluateOptions& o, const CommonOptions& common) {
  const ng::Device device = examples::parse_device(common.device, kProgram);
  const ModelFolder folder(o.model);
  const RunConfig run = folder.read_config();
  const std::string weights = folder.weights("train it to its first validation");
  const ReaderVocabulary vocabulary = ReaderVocabulary::load(folder.file("vocabulary.txt"));
  const std::vector<Question> questions =
      load_questions(o.data.empty() ? run.data.folder : o.data, o.split, o.questions);
  if (common.threads > 0) ng::set_num_threads(common.threads);
  AttentiveReader model(run.model);
  ng::io::load(model, weights);
  model.to(device);
  const Evaluation result = evaluate_questions(model, questions, vocabulary, device);
  std::printf("%s, %s split: error %.2f%% (loss %.4f) on %lld questions\n", o.model.c_str(),
              o.split.c_str(), 100 * result.error, result.loss,
              static_cast<long long>(result.questions));
  return 0;
}

struct ExperimentOptions : examples::ExperimentFlags, examples::ExperimentDataFlags {};

const examples::ExperimentData local_task{.name = "the cloze task",
                                          .data_help = "a folder of questions, as the CNN corpus's",
                                          .corpus_help = "train.en",
                                          .built_file = "questions/test"};

int experiment(const ExperimentOptions& o, const CommonOptions& common) {
  const ng::Device device = examples::parse_device(common.device, kProgram);
  const Budget budget = budget_named(o.budget);
  for (const std::string& norm : o.norms) parse_model_norm(norm);
  const auto build = [&](const std::string& corpus, const std::string& folder) {
    build_local_task(
        {.corpus = corpus, .out = folder, .document_segments = budget.document_segments});
  };
  const std::string data = examples::experiment_data_folder(o, o.out, local_task, build, kProgram);
  ExperimentSettings settings{
      .norms = o.norms, .out = o.out, .budget = budget.name, .timing = budget.timing};
  settings.base.model = {
      .dim = budget.dim, .dropout = budget.dropout, .answers = budget.answers, .seed = o.seed};
  settings.base.data = {.folder = fs::absolute(data).lexically_normal().string(),
                        .training_questions = budget.training_questions,
                        .validation_questions = budget.validation_questions};
  settings.base.training = {.steps = o.steps > 0 ? o.steps : budget.steps,
                            .batch_size = budget.batch_size,
                            .learning_rate = budget.learning_rate,
                            .clip = kPaperTraining.clip,
                            .valid_every = budget.valid_every,
                            .seed = o.seed};
  const int threads = common.threads > 0 ? common.threads : budget.threads;
  if (threads > 0) ng::set_num_threads(threads);
  run_experiment(settings, device, progress_bar(o.no_progress));
  return 0;
}

int run_timing(const TimingSettings& settings, const std::string& out,
               const CommonOptions& common) {
  const ng::Device device = examples::parse_device(common.device, kProgram);
  for (const std::string& norm : settings.norms) parse_model_norm(norm);
  if (common.threads > 0) ng::set_num_threads(common.threads);
  std::fprintf(stderr,
               "attentive_reader: timing %zu norms at batch %lld, %lld units, %lld words on %s: "
               "%lld rounds of %lld steps each\n",
               settings.norms.size(), static_cast<long long>(settings.batch),
               static_cast<long long>(settings.dim), static_cast<long long>(settings.vocabulary),
               device.str().c_str(), static_cast<long long>(settings.rounds.rounds),
               static_cast<long long>(settings.rounds.steps));
  const std::vector<examples::NormTiming> timings = time_norms(settings, device, stderr);
  const std::string table = examples::timing_markdown(timings, paper_table6());
  std::printf("%s", table.c_str());
  if (!out.empty()) examples::write_timing_tables(out, "table6", timings, table, kProgram);
  return 0;
}

int prepare(const LocalTaskSettings& settings) {
  std::fprintf(stderr, "attentive_reader: building a cloze task from '%s'\n",
               settings.corpus.c_str());
  const LocalTaskSummary summary = build_local_task(settings);
  std::printf(
      "%lld training, %lld validation and %lld test questions (%lld windows skipped: "
      "no shared content word) in %s/questions\n",
      static_cast<long long>(summary.training), static_cast<long long>(summary.validation),
      static_cast<long long>(summary.test), static_cast<long long>(summary.skipped),
      settings.out.c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  examples::default_to_passive_waiting(argv);
  CLI::App app{
      "The bidirectional attentive reader with LayerNorm, RMSNorm, pRMSNorm, BatchNorm or no "
      "norm in its LSTMs: the RMSNorm paper's Table 6"};
  app.require_subcommand(1);

  LocalTaskSettings p;
  CLI::App* prepare_command = app.add_subcommand(
      "prepare", "a cloze task of the CNN corpus's shape from a parallel corpus's English side");
  prepare_command->add_option("--corpus", p.corpus, "a folder with train.en")->required();
  prepare_command->add_option("--out", p.out, "the task's folder")->required();
  prepare_command->add_option("--document-segments", p.document_segments, "segments a document")
      ->check(examples::kPositive)
      ->capture_default_str();
  prepare_command->add_option("--min-query-words", p.min_query_words, "the shortest query")
      ->check(examples::kPositive)
      ->capture_default_str();
  prepare_command
      ->add_option("--common-words", p.common_words,
                   "the most frequent words, kept as words (rarer ones are entities)")
      ->check(examples::kNonNegative)
      ->capture_default_str();
  prepare_command
      ->add_option("--query", p.query,
                   "inside (one of the document's segments) or next (the segment "
                   "after it)")
      ->check(CLI::IsMember({"inside", "next"}))
      ->capture_default_str();
  prepare_command->add_option("--seed", p.seed, "the entities' numbering and the query's segment")
      ->capture_default_str();

  CommonOptions common;
  const auto add_common = [&](CLI::App* command) { examples::add_device_flags(command, common); };

  TrainOptions t;
  CLI::App* train_command = app.add_subcommand("train", "train a model, or continue its run");
  train_command->add_option("--out", t.out, "the model folder (a run in it is continued)")
      ->capture_default_str();
  train_command->add_option("--data", t.data,
                            "the questions' folder (holding questions/training, validation, "
                            "test), needed to start a run");
  train_command
      ->add_option("--norm", t.norm,
                   "none, layernorm, rmsnorm, prmsnorm:0.0625, batchnorm, with options")
      ->capture_default_str();
  train_command->add_option("--dim", t.dim, "embedding, LSTM and attention size")
      ->check(examples::kPositive)
      ->capture_default_str();
  train_command->add_option("--dropout", t.dropout, "on the words and the answer's layer")
      ->check(examples::kNonNegative)
      ->capture_default_str();
  train_command
      ->add_option("--answers", t.answers,
                   "vocabulary (every word, as the paper's run) or document (the "
                   "document's entities)")
      ->check(CLI::IsMember({"vocabulary", "document"}))
      ->capture_default_str();
  train_command->add_option("--steps", t.steps, "training steps")
      ->check(examples::kPositive)
      ->capture_default_str();
  train_command->add_option("--batch", t.batch, "questions per batch")
      ->check(examples::kPositive)
      ->capture_default_str();
  train_command->add_option("--valid-every", t.valid_every, "steps between validations")
      ->check(examples::kPositive)
      ->capture_default_str();
  train_command
      ->add_option("--training-questions", t.training_questions, "the first so many (0: all)")
      ->check(examples::kNonNegative);
  train_command
      ->add_option("--validation-questions", t.validation_questions, "the first so many (0: all)")
      ->check(examples::kNonNegative);
  train_command->add_option("--lr", t.lr, "Adam's learning rate")
      ->check(examples::kPositive)
      ->capture_default_str();
  train_command->add_option("--clip", t.clip, "the gradients' largest global norm (0: none)")
      ->check(examples::kNonNegative)
      ->capture_default_str();
  train_command->add_option("--seed", t.seed, "initial weights, dropout, batches")
      ->capture_default_str();
  train_command->add_flag("--no-progress", t.no_progress, "no progress line on a terminal");
  add_common(train_command);

  EvaluateOptions e;
  CLI::App* evaluate_command =
      app.add_subcommand("evaluate", "the error of a model folder's best weights on a split");
  evaluate_command->add_option("--model", e.model, "the model folder")->required();
  evaluate_command->add_option("--data", e.data, "the questions' folder, if not the trained one's");
  evaluate_command->add_option("--split", e.split, "training, validation or test")
      ->check(CLI::IsMember({"training", "validation", "test"}))
      ->capture_default_str();
  evaluate_command->add_option("--questions", e.questions, "the first so many (0: all)")
      ->check(examples::kNonNegative);
  add_common(evaluate_command);

  ExperimentOptions x;
  x.out = "out/attentive_reader";
  x.norms = paper_norms();
  CLI::App* experiment_command = app.add_subcommand(
      "experiment", "the paper's Table 6 in shape: every norm trained the same way, a report");
  examples::add_experiment_data_flags(experiment_command, x, local_task);
  examples::add_experiment_flags(
      experiment_command, x, {"tiny", "demo", "long", "paper"},
      "tiny (seconds, to check the pipeline), demo, long, or paper (the paper's "
      "sizes, 300k steps)");
  add_common(experiment_command);

  TimingSettings m;
  std::string time_out;
  CLI::App* time_command = app.add_subcommand(
      "time",
      "the paper's Table 6 in shape: seconds per 100 training steps of every norm at "
      "the paper's sizes, on questions of the real data's shape");
  examples::add_rounds_flags(time_command, m.norms, m.rounds);
  time_command->add_option("--batch", m.batch, "questions per step")
      ->check(examples::kPositive)
      ->capture_default_str();
  time_command->add_option("--dim", m.dim, "embedding, LSTM and attention size")
      ->check(examples::kPositive)
      ->capture_default_str();
  time_command->add_option("--vocabulary", m.vocabulary, "words the answer layer scores")
      ->check(examples::kPositive)
      ->capture_default_str();
  time_command->add_option("--document-length", m.min_document, "the shortest document")
      ->check(examples::kPositive)
      ->capture_default_str();
  time_command->add_option("--max-document-length", m.max_document, "the longest document")
      ->check(examples::kPositive)
      ->capture_default_str();
  time_command->add_option("--out", time_out, "a folder for table6.csv and table6.md");
  add_common(time_command);

  CLI11_PARSE(app, argc, argv);
  try {
    if (*train_command) return train(t, common, *train_command);
    if (*evaluate_command) return evaluate(e, common);
    if (*experiment_command) return experiment(x, common);
    if (*time_command) return run_timing(m, time_out, common);
    return prepare(p);
  } catch (const ng::Error& error) {
    return examples::print_program_error(kProgram, error);
  }
}
