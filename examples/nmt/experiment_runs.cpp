#include "nmt/experiment_runs.h"

#include <filesystem>
#include <nlohmann/json.hpp>

#include "common/cpu_share.h"
#include "common/model_size.h"
#include "common/run_folder.h"
#include "nmt/experiment_report.h"
#include "nmt/model_folder.h"
#include "text/bleu.h"
#include "text/paired_bootstrap.h"
#include "text/text_file.h"

namespace nmt {

namespace ng = normgrad;
namespace fs = std::filesystem;

namespace {

// The share of the CPU other processes took, as experiment.json in a run's folder keeps it;
// -1 when the file is missing or holds none.
double read_other_processes_share(const std::string& path, const std::string& program) {
  if (!fs::exists(path)) return -1;
  const auto json = nlohmann::json::parse(ng::text::read_file_bytes(path, program.c_str()), nullptr,
                                          /*allow_exceptions=*/false);
  if (json.is_object() && json.contains("other_processes_cpu") &&
      json["other_processes_cpu"].is_number())
    return json["other_processes_cpu"].get<double>();
  return -1;
}

// `path` made absolute and normal (unchanged where that fails).
std::string absolute_path(const std::string& path) {
  std::error_code ec;
  const auto absolute = fs::absolute(path, ec);
  return ec ? path : absolute.lexically_normal().string();
}

// <out>/tokenizer.model, trained on the corpus's training text the first time and loaded after
// (an Error if that one has another vocabulary size). Returns its path.
std::string shared_tokenizer(const std::string& out, const std::string& corpus,
                             std::int64_t vocabulary_size, const std::string& program,
                             std::ostream* messages) {
  const std::string path = (fs::path(out) / "tokenizer.model").string();
  if (fs::exists(path)) {
    const auto tokenizer = ng::text::SubwordTokenizer::load(path);
    NG_CHECK(tokenizer.vocabulary_size() == vocabulary_size, program, path, " has ",
             tokenizer.vocabulary_size(), " pieces, not the ", vocabulary_size,
             " asked for; remove it or choose another --out");
    return path;
  }
  const std::string source = corpus_file(corpus, "train.en"),
                    target = corpus_file(corpus, "train.de");
  if (messages != nullptr)
    *messages << "training the tokenizer on " << source << " and " << target << "\n" << std::flush;
  fs::create_directories(out);
  ng::text::SubwordTokenizer::train({source, target},
                                    {.vocabulary_size = static_cast<std::int32_t>(vocabulary_size)})
      .save(path);
  return path;
}

}  // namespace

void check_budget(const ExperimentBudget& b, bool figure4, const std::string& program) {
  NG_CHECK(b.steps > 0 && b.dev_loss_every > 0 && b.dev_bleu_every > 0 && b.test_sentences >= 0 &&
               (!figure4 || b.figure4_steps > 0),
           program, "the budget needs positive steps and intervals, got steps ", b.steps,
           figure4 ? ", Figure 4 steps " + std::to_string(b.figure4_steps) : std::string(),
           ", dev loss every ", b.dev_loss_every, ", dev BLEU every ", b.dev_bleu_every,
           ", test sentences ", b.test_sentences);
}

std::string norms_per_run(const std::vector<std::string>& norms) {
  std::string text;
  for (const auto& norm : norms) text += (text.empty() ? "" : ", ") + norm;
  return "per run: " + text;
}

std::string corpus_file(const std::string& corpus, const std::string& name) {
  return (fs::path(corpus) / name).string();
}

void check_experiment_corpus(const std::string& corpus, const std::string& program) {
  for (const char* name : {"train.en", "train.de", "dev.en", "dev.de", "test.en", "test.de"}) {
    std::error_code ec;
    NG_CHECK(fs::is_regular_file(corpus_file(corpus, name), ec), program, "the corpus folder '",
             corpus, "' has no ", name, " (scripts/build_corpus builds one)");
  }
}

TestSet load_test_set(const std::string& corpus, std::int64_t limit, const std::string& program) {
  TestSet test;
  test.sources =
      ng::text::strip_line_ends(ng::text::read_text_lines(corpus_file(corpus, "test.en")));
  test.references =
      ng::text::strip_line_ends(ng::text::read_text_lines(corpus_file(corpus, "test.de")));
  NG_CHECK(test.sources.size() == test.references.size(), program, "test.en has ",
           test.sources.size(), " lines but test.de has ", test.references.size());
  if (limit > 0 && static_cast<std::size_t>(limit) < test.sources.size()) {
    test.sources.resize(static_cast<std::size_t>(limit));
    test.references.resize(static_cast<std::size_t>(limit));
  }
  return test;
}

ExperimentInputs prepare_experiment(const std::string& out, const std::string& corpus,
                                    std::int64_t vocabulary_size, const ExperimentBudget& budget,
                                    ExperimentResults& results, const std::string& program,
                                    std::ostream* messages) {
  fs::create_directories(fs::path(out) / "runs");
  ExperimentInputs inputs;
  inputs.tokenizer = shared_tokenizer(out, corpus, vocabulary_size, program, messages);
  inputs.test = load_test_set(corpus, budget.test_sentences, program);
  results.budget = budget;
  results.test_sentences = static_cast<std::int64_t>(inputs.test.sources.size());
  results.bleu_signature = ng::text::Bleu().signature(1);
  return inputs;
}

void set_run_budget(TrainingSettings& t, const std::string& corpus, const ExperimentBudget& budget,
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

void train_and_measure(RunResult& run, const std::function<TrainSummary()>& train,
                       const std::string& program) {
  const ModelFolder folder(run.folder, program);
  const examples::OtherProcessesMeter others;
  const TrainSummary summary = train();
  // The share is kept for the steps this invocation took; a run taken as it is keeps its own.
  const std::string share_path = folder.file("experiment.json");
  const auto share = others.fraction();
  if (summary.last_step > summary.first_step && share)
    write_text_file(share_path, nlohmann::json{{"other_processes_cpu", *share}}.dump() + "\n",
                    program);
  run.other_processes_cpu = read_other_processes_share(share_path, program);

  run.log = read_train_log(folder.file("train.csv"), program);
  std::vector<double> step_seconds;
  for (const LogRow& row : run.log) {
    step_seconds.push_back(row.step_seconds);
    run.best_dev_bleu = std::max(run.best_dev_bleu, row.dev_bleu);
  }
  run.steps = run.log.empty() ? 0 : run.log.back().step;
  run.seconds_per_1000_steps = 1000 * quantile(step_seconds, 0.5);
  run.step_seconds_spread =
      1000 * (quantile(step_seconds, 0.75) - quantile(step_seconds, 0.25)) / 2;
}

std::vector<ng::text::MetricStatistics> test_experiment_run(
    RunResult& run, const ng::nn::Module& model, const ng::text::SubwordTokenizer& tokenizer,
    const TestSet& test, const SentenceTranslator& translate, const std::string& program) {
  run.parameters = examples::count_parameters(model);
  std::vector<std::vector<std::int32_t>> encoded;
  encoded.reserve(test.sources.size());
  for (const auto& line : test.sources) encoded.push_back(tokenizer.encode(line));
  const std::vector<std::string> translations = translate(encoded);
  std::string text;
  for (const auto& line : translations) text += line + "\n";
  write_text_file(ModelFolder(run.folder, program).file("test.hyp"), text, program);
  const std::vector<std::vector<std::string>> streams{test.references};
  const ng::text::Bleu bleu;
  auto statistics = bleu.segment_statistics(translations, streams);
  run.test_bleu = bleu.score(ng::text::sum_statistics(statistics)).score;
  return statistics;
}

void announce(const examples::SweepRun& run, const std::string& title, std::int64_t steps,
              std::ostream* messages) {
  if (messages != nullptr)
    *messages << "== " << title << ", run " << run.index + 1 << " of " << run.count << ": "
              << run.norm << ", " << steps << " steps\n"
              << std::flush;
}

void compare_with_layernorm(
    std::vector<RunResult>& runs,
    const std::vector<std::vector<ng::text::MetricStatistics>>& statistics) {
  // The baseline: the LayerNorm run, or the first run when there is none (its p-values are
  // then left out, but every run still gets its interval).
  std::size_t baseline = 0;
  for (std::size_t i = 0; i < runs.size(); ++i)
    if (runs[i].norm == "layernorm") baseline = i;
  const bool layernorm = !runs.empty() && runs[baseline].norm == "layernorm";
  const ng::text::Bleu bleu;
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const auto paired = ng::text::paired_bootstrap(bleu, statistics[baseline], statistics[i]);
    runs[i].test_bleu_mean = paired.system.mean;
    runs[i].test_bleu_interval = paired.system.interval;
    if (i != baseline && layernorm) runs[i].p_against_layernorm = paired.p_value;
  }
}

}  // namespace nmt
