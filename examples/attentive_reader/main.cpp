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

#include <CLI/CLI.hpp>
#include <cstdio>
#include <string>

#include "common/command_flags.h"
#include "common/number_checks.h"
#include "common/program_error.h"
#include "common/validated_commands.h"
#include "common/wait_policy.h"
#include "experiment.h"
#include "local_task.h"
#include "model_folder.h"
#include "run.h"
#include "timing.h"

namespace ng = normgrad;
using namespace attentive_reader;

namespace {

constexpr const char* kProgram = "attentive_reader";

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

struct EvaluateOptions {
  std::string model, data, split = "test";
  std::int64_t questions = 0;
  examples::DeviceFlags device;
};

int evaluate(const EvaluateOptions& o) {
  const ng::Device device = examples::use_device(o.device, kProgram);
  const ModelFolder folder(o.model);
  const RunConfig run = folder.read_config();
  const auto model = examples::load_trained_model<AttentiveReader>(folder, device);
  const ReaderVocabulary vocabulary = ReaderVocabulary::load(folder.file("vocabulary.txt"));
  const std::vector<Question> questions =
      load_questions(o.data.empty() ? run.data.folder : o.data, o.split, o.questions);
  const Evaluation result = evaluate_questions(*model, questions, vocabulary, device);
  std::printf("%s, %s split: error %.2f%% (loss %.4f) on %lld questions\n", o.model.c_str(),
              o.split.c_str(), 100 * result.error, result.loss,
              static_cast<long long>(result.questions));
  return 0;
}

const examples::ExperimentData local_task{.name = "the cloze task",
                                          .data_help = "a folder of questions, as the CNN corpus's",
                                          .corpus_help = "train.en",
                                          .built_file = "questions/test"};

int experiment(const examples::ExperimentCommand& command) {
  Budget budget = budget_named(command.flags.budget);
  const auto build = [&](const std::string& corpus, const std::string& folder) {
    build_local_task(
        {.corpus = corpus, .out = folder, .document_segments = budget.document_segments});
  };
  const ng::Device device =
      command.start(budget.run, budget.threads, parse_model_norm, build, kProgram);
  run_experiment({.norms = command.flags.norms, .out = command.flags.out, .budget = budget}, device,
                 command.progress_bar());
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
  examples::add_positive(prepare_command, "--document-segments", p.document_segments,
                         "segments a document");
  examples::add_positive(prepare_command, "--min-query-words", p.min_query_words,
                         "the shortest query");
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

  examples::TrainCommand<RunConfig> train(app, kProgram, {.training = kPaperTraining},
                                          "out/attentive_reader/rmsnorm",
                                          "the questions' folder (holding questions/training, "
                                          "validation, test), needed to start a run");
  RunConfig& t = train.run;
  train.add("--norm", t.model.norm, "/model/norm",
            "none, layernorm, rmsnorm, prmsnorm:0.0625, batchnorm, with options");
  train.add("--dim", t.model.dim, "/model/dim", "embedding, LSTM and attention size")
      ->check(examples::kPositive);
  train.add("--dropout", t.model.dropout, "/model/dropout", "on the words and the answer's layer")
      ->check(examples::kNonNegative);
  train
      .add("--answers", t.model.answers, "/model/answers",
           "vocabulary (every word, as the paper's run) or document (the document's entities)")
      ->check(CLI::IsMember({"vocabulary", "document"}));
  train
      .add("--training-questions", t.data.training_questions, "/data/training_questions",
           "the first so many (0: all)")
      ->check(examples::kNonNegative);
  train
      .add("--validation-questions", t.data.validation_questions, "/data/validation_questions",
           "the first so many (0: all)")
      ->check(examples::kNonNegative);
  train.add_training_flags({.batch = "questions per batch",
                            .clip = "the gradients' largest global norm (0: none)",
                            .seed = "initial weights, dropout, batches"});

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
  examples::add_device_flags(evaluate_command, e.device);

  examples::ExperimentCommand experiment_command(
      app, "the paper's Table 6 in shape: every norm trained the same way, a report", local_task,
      examples::budget_names(budgets()),
      "tiny (seconds, to check the pipeline), demo, long, or paper (the paper's sizes, 300k steps)",
      "out/attentive_reader", paper_norms());

  examples::TimeCommand<TimingSettings> time(
      app,
      "the paper's Table 6 in shape: seconds per 100 training steps of every norm at the "
      "paper's sizes, on questions of the real data's shape",
      "table6");
  TimingSettings& m = time.settings;
  examples::add_positive(time.command, "--batch", m.batch, "questions per step");
  examples::add_positive(time.command, "--dim", m.dim, "embedding, LSTM and attention size");
  examples::add_positive(time.command, "--vocabulary", m.vocabulary,
                         "words the answer layer scores");
  examples::add_positive(time.command, "--document-length", m.min_document,
                         "the shortest document");
  examples::add_positive(time.command, "--max-document-length", m.max_document,
                         "the longest document");

  CLI11_PARSE(app, argc, argv);
  try {
    if (*train.command) return train.train<ModelFolder>(parse_model_norm, train_in_folder);
    if (*evaluate_command) return evaluate(e);
    if (*experiment_command.command) return experiment(experiment_command);
    if (*time.command) return time.time(kProgram, parse_model_norm, time_norms, paper_table6());
    return prepare(p);
  } catch (const ng::Error& error) {
    return examples::print_program_error(kProgram, error);
  }
}
