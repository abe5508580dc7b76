#include "experiment.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>

#include "common/cpu_share.h"
#include "data/bleu.h"
#include "data/paired_bootstrap.h"
#include "data/parallel_dataset.h"
#include "data/subword_tokenizer.h"
#include "data/text_file.h"
#include "model_folder.h"
#include "nn/atomic_file.h"
#include "trainer.h"
#include "translation.h"

namespace gru_nmt {

namespace ng = normgrad;
namespace fs = std::filesystem;

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

std::string corpus_file(const ExperimentOptions& options, const std::string& name) {
  return (fs::path(options.corpus) / name).string();
}

// "prmsnorm:0.0625" -> "prmsnorm-0.0625": a folder name from a norm spec.
std::string folder_name(const std::string& norm, double init_center) {
  std::string name;
  for (const char c : norm) name += (c == ':' || c == ',' || c == '=' || c == '/') ? '-' : c;
  if (init_center != 0) {
    std::ostringstream centre;
    centre << init_center;
    name += "-centre-" + centre.str();
  }
  return name;
}

// The settings of one run: the experiment's base with this run's norm, centre and budget.
Settings run_settings(const ExperimentOptions& options, const std::string& norm, double init_center,
                      std::int64_t steps) {
  Settings settings = options.settings;
  settings.model.norm = norm;
  settings.model.init_center = init_center;
  auto& t = settings.training;
  t.train_source = corpus_file(options, "train.en");
  t.train_target = corpus_file(options, "train.de");
  t.dev_source = corpus_file(options, "dev.en");
  t.dev_target = corpus_file(options, "dev.de");
  t.max_steps = steps;
  t.max_seconds = 0;
  // A short run still measures its dev loss and BLEU at its last step.
  t.dev_loss_every = std::min(options.budget.dev_loss_every, steps);
  t.dev_bleu_every = std::min(options.budget.dev_bleu_every, steps);
  t.dev_beam = 1;
  t.patience = 0;  // every run takes the same number of steps
  t.checkpoint_every = std::max<std::int64_t>(1, steps / 4);
  t.keep_checkpoints = 1;
  for (auto* path : {&t.train_source, &t.train_target, &t.dev_source, &t.dev_target}) {
    std::error_code ec;
    const auto absolute = fs::absolute(*path, ec);
    if (!ec) *path = absolute.lexically_normal().string();
  }
  return settings;
}

// Trains one run into its folder, or continues it, or takes it as it is.
RunResult train_run(const ExperimentOptions& options, const std::string& tokenizer_path,
                    const std::string& label, const std::string& norm, double init_center,
                    std::int64_t steps) {
  RunResult run;
  run.label = label;
  run.norm = norm;
  run.init_center = init_center;
  run.folder = (fs::path(options.out) / "runs" / folder_name(norm, init_center)).string();
  const Settings settings = run_settings(options, norm, init_center, steps);
  const ModelFolder folder(run.folder);
  TrainOptions train_options{.folder = run.folder,
                             .settings = settings,
                             .device = options.device,
                             .messages = options.messages};
  if (folder.has_config()) {
    // Only a run of the same settings is continued: the budgets aside, they must agree.
    std::string fingerprint;
    Settings found = folder.read_config(&fingerprint);
    found.training.max_steps = settings.training.max_steps;
    NG_CHECK(to_json(found) == to_json(settings), "gru_nmt experiment", run.folder,
             " holds a run of other settings; remove it or choose another --out");
    train_options.resume = true;
    train_options.resume_max_steps = steps;
  } else {
    train_options.tokenizer = tokenizer_path;
  }
  const examples::OtherProcessesMeter others;
  const TrainSummary summary = train(train_options);
  // The share is kept for the steps this invocation took; a run taken as it is keeps its own.
  const std::string share_path = folder.file("experiment.json");
  const auto share = others.fraction();
  if (summary.last_step > summary.first_step && share) {
    const std::string text = nlohmann::json{{"other_processes_cpu", *share}}.dump() + "\n";
    ng::nn::write_atomically(share_path, "gru_nmt experiment", [&](const ng::nn::FileWriter& out) {
      out.write(text.data(), text.size());
    });
  }
  if (fs::exists(share_path)) {
    const auto json = nlohmann::json::parse(ng::data::read_file_bytes(share_path, "gru_nmt"),
                                            nullptr, /*allow_exceptions=*/false);
    if (json.is_object() && json.contains("other_processes_cpu") &&
        json["other_processes_cpu"].is_number())
      run.other_processes_cpu = json["other_processes_cpu"].get<double>();
  }
  run.log = read_train_log(folder.file("train.csv"));
  std::vector<double> step_seconds;
  for (const LogRow& row : run.log) {
    step_seconds.push_back(row.step_seconds);
    run.best_dev_bleu = std::max(run.best_dev_bleu, row.dev_bleu);
  }
  run.steps = run.log.empty() ? 0 : run.log.back().step;
  run.seconds_per_1000_steps = 1000 * nmt::quantile(step_seconds, 0.5);
  run.step_seconds_spread =
      1000 * (nmt::quantile(step_seconds, 0.75) - nmt::quantile(step_seconds, 0.25)) / 2;
  return run;
}

// A run's translations of the test sources with beam search, from its best weights, written
// to test.hyp in its folder; returns their BLEU statistics against the references.
std::vector<ng::data::MetricStatistics> test_run(const ExperimentOptions& options, RunResult& run,
                                                 const std::vector<std::string>& sources,
                                                 const std::vector<std::string>& references) {
  ng::Generator generator(0);
  LoadedModel loaded = load_model_folder(ModelFolder(run.folder), generator);
  if (!options.device.is_cpu()) loaded.model->to(options.device);
  run.parameters = 0;
  for (const auto& parameter : loaded.model->parameters()) run.parameters += parameter.numel();
  std::vector<std::vector<std::int32_t>> encoded;
  encoded.reserve(sources.size());
  for (const auto& line : sources) encoded.push_back(loaded.tokenizer.encode(line));
  const ng::decoding::BeamSearchOptions search = search_options(options.beam);
  const auto translations =
      translate_sentences(*loaded.model, loaded.tokenizer, encoded, search, 32, options.device);
  std::string text;
  for (const auto& line : translations) text += line + "\n";
  ng::nn::write_atomically(
      ModelFolder(run.folder).file("test.hyp"), "gru_nmt experiment",
      [&](const ng::nn::FileWriter& out) { out.write(text.data(), text.size()); });
  const std::vector<std::vector<std::string>> streams{references};
  const ng::data::Bleu bleu;
  auto statistics = bleu.segment_statistics(translations, streams);
  run.test_bleu = bleu.score(ng::data::sum_statistics(statistics)).score;
  return statistics;
}

}  // namespace

ExperimentBudget experiment_budget(const std::string& name) {
  // Measured with the small preset on 2 cores: a median training step of about 0.11 s, a dev
  // BLEU (greedy, 2000 sentences) of a few seconds, beam-5 test translations of about 20 s per
  // 1000 sentences. Seven runs (Table 2 and Figure 4) then take about 12 minutes in the demo.
  if (name == "demo")
    return {.name = "demo",
            .steps = 600,
            .figure4_steps = 600,
            .dev_loss_every = 100,
            .dev_bleu_every = 300,
            .test_sentences = 500};
  if (name == "long")
    return {.name = "long",
            .steps = 3000,
            .figure4_steps = 3000,
            .dev_loss_every = 250,
            .dev_bleu_every = 500,
            .test_sentences = 0};
  throw ng::Error("gru_nmt experiment: unknown budget '" + name + "'; expected demo or long");
}

Settings shared_run_settings(const ExperimentOptions& options) {
  std::string norms;
  for (const auto& norm : options.norms) norms += (norms.empty() ? "" : ", ") + norm;
  Settings settings = run_settings(options, "", 0.0, options.budget.steps);
  settings.model.norm = "per run: " + norms;
  return settings;
}

std::vector<LogRow> read_train_log(const std::string& path) {
  return nmt::read_train_log(path, "gru_nmt");
}

void check_experiment(const ExperimentOptions& options) {
  for (const char* name : {"train.en", "train.de", "dev.en", "dev.de", "test.en", "test.de"}) {
    std::error_code ec;
    NG_CHECK(fs::is_regular_file(corpus_file(options, name), ec), "gru_nmt experiment",
             "the corpus folder '", options.corpus, "' has no ", name,
             " (scripts/build_corpus builds one)");
  }
  const ExperimentBudget& b = options.budget;
  NG_CHECK(b.steps > 0 && b.dev_loss_every > 0 && b.dev_bleu_every > 0 && b.test_sentences >= 0 &&
               (!options.figure4 || b.figure4_steps > 0),
           "gru_nmt experiment", "the budget needs positive steps and intervals, got steps ",
           b.steps, ", Figure 4 steps ", b.figure4_steps, ", dev loss every ", b.dev_loss_every,
           ", dev BLEU every ", b.dev_bleu_every);
  NG_CHECK(!options.norms.empty(), "gru_nmt experiment", "no norms to compare");
  for (const auto& norm : options.norms) {
    Settings settings = options.settings;
    settings.model.norm = norm;
    check(settings);  // an Error for an unknown or unfitting norm
  }
  NG_CHECK(options.beam > 0, "gru_nmt experiment", "the beam must be positive, got ", options.beam);
}

ExperimentResults run_experiment(const ExperimentOptions& options) {
  check_experiment(options);
  const auto start = Clock::now();
  auto say = [&](const std::string& text) {
    if (options.messages != nullptr) *options.messages << text << std::flush;
  };
  ExperimentResults results;
  results.budget = options.budget;
  fs::create_directories(fs::path(options.out) / "runs");

  // One tokenizer for every run, trained once.
  const std::string tokenizer_path = (fs::path(options.out) / "tokenizer.model").string();
  std::optional<ng::data::SubwordTokenizer> tokenizer;
  if (fs::exists(tokenizer_path)) {
    tokenizer = ng::data::SubwordTokenizer::load(tokenizer_path);
    NG_CHECK(tokenizer->vocabulary_size() == options.settings.model.vocabulary_size,
             "gru_nmt experiment", tokenizer_path, " has ", tokenizer->vocabulary_size(),
             " pieces, not the ", options.settings.model.vocabulary_size,
             " asked for; remove it or choose another --out");
  } else {
    say("training the tokenizer on " + corpus_file(options, "train.en") + " and " +
        corpus_file(options, "train.de") + "\n");
    tokenizer = ng::data::SubwordTokenizer::train(
        {corpus_file(options, "train.en"), corpus_file(options, "train.de")},
        {.vocabulary_size = static_cast<std::int32_t>(options.settings.model.vocabulary_size)});
    tokenizer->save(tokenizer_path);
  }

  // The test set: the first test_sentences lines, sources and references.
  auto sources =
      ng::data::strip_line_ends(ng::data::read_text_lines(corpus_file(options, "test.en")));
  auto references =
      ng::data::strip_line_ends(ng::data::read_text_lines(corpus_file(options, "test.de")));
  NG_CHECK(sources.size() == references.size(), "gru_nmt experiment", "test.en has ",
           sources.size(), " lines but test.de has ", references.size());
  const std::int64_t limit = options.budget.test_sentences;
  if (limit > 0 && static_cast<std::size_t>(limit) < sources.size()) {
    sources.resize(static_cast<std::size_t>(limit));
    references.resize(static_cast<std::size_t>(limit));
  }
  results.test_sentences = static_cast<std::int64_t>(sources.size());
  results.bleu_signature = ng::data::Bleu().signature(1);

  // Table 2 and Figure 1.
  std::vector<std::vector<ng::data::MetricStatistics>> statistics;
  for (std::size_t i = 0; i < options.norms.size(); ++i) {
    const std::string& norm = options.norms[i];
    say("== Table 2, run " + std::to_string(i + 1) + " of " + std::to_string(options.norms.size()) +
        ": " + norm + ", " + std::to_string(options.budget.steps) + " steps\n");
    RunResult run = train_run(options, tokenizer_path, norm, norm, 0.0, options.budget.steps);
    say("   test BLEU, beam " + std::to_string(options.beam) + ", " +
        std::to_string(sources.size()) + " sentences\n");
    statistics.push_back(test_run(options, run, sources, references));
    results.table2.push_back(std::move(run));
  }
  // Bootstrap intervals, and p-values against LayerNorm (or the first run without one).
  std::size_t baseline = 0;
  for (std::size_t i = 0; i < results.table2.size(); ++i)
    if (results.table2[i].norm == "layernorm") baseline = i;
  const ng::data::Bleu bleu;
  for (std::size_t i = 0; i < results.table2.size(); ++i) {
    const auto paired = ng::data::paired_bootstrap(bleu, statistics[baseline], statistics[i]);
    RunResult& run = results.table2[i];
    run.test_bleu_mean = paired.system.mean;
    run.test_bleu_interval = paired.system.interval;
    if (i != baseline && results.table2[baseline].norm == "layernorm")
      run.p_against_layernorm = paired.p_value;
  }

  // Table 5 on the dev set.
  const auto dev = ng::data::ParallelDataset::load(corpus_file(options, "dev.en"),
                                                   corpus_file(options, "dev.de"), *tokenizer, {});
  for (const RunResult& run : results.table2) {
    if (run.norm != "none" && run.norm != "layernorm" && run.norm != "rmsnorm") continue;
    say("== Table 5: " + run.norm + "\n");
    ng::Generator generator(0);
    LoadedModel loaded = load_model_folder(ModelFolder(run.folder), generator);
    if (!options.device.is_cpu()) loaded.model->to(options.device);
    results.table5.push_back(
        {run.norm,
         hidden_to_hidden_statistics(*loaded.model, dev, options.settings.training.batch_sentences,
                                     options.device)});
  }

  // Figure 4.
  if (options.figure4) {
    for (const char* norm : {"layernorm", "rmsnorm"}) {
      say(std::string("== Figure 4: ") + norm + " from weights centred at 0.2, " +
          std::to_string(options.budget.figure4_steps) + " steps\n");
      results.figure4.push_back(train_run(options, tokenizer_path,
                                          std::string(norm) + ", centre 0.2", norm, 0.2,
                                          options.budget.figure4_steps));
    }
  }
  results.total_seconds = seconds_since(start);
  return results;
}

}  // namespace gru_nmt
