#include "experiment.h"

#include <chrono>

#include "common/norm_sweep.h"
#include "model_folder.h"
#include "nmt/experiment_report.h"
#include "text/parallel_dataset.h"
#include "text/subword_tokenizer.h"
#include "trainer.h"
#include "translation.h"

namespace gru_nmt {

namespace ng = normgrad;

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// The settings of one run: the experiment's base with this run's norm, centre and budget.
Settings run_settings(const ExperimentOptions& options, const std::string& norm, double init_center,
                      std::int64_t steps) {
  Settings settings = options.settings;
  settings.model.norm = norm;
  settings.model.init_center = init_center;
  nmt::set_run_budget(settings.training, options.corpus, options.budget, steps);
  return settings;
}

// Trains one run of a sweep into its folder, or continues it, or takes it as it is.
RunResult train_run(const ExperimentOptions& options, const std::string& tokenizer_path,
                    const examples::SweepRun& sweep_run, const Settings& settings) {
  return nmt::train_experiment_run<ModelFolder>(
      sweep_run, settings, TrainOptions{.device = options.device, .messages = options.messages},
      tokenizer_path, [](const TrainOptions& train_options) { return train(train_options); },
      experiment_program);
}

// A run's translations of the test sources with beam search, from its best weights, written
// to test.hyp in its folder; returns their BLEU statistics against the references.
std::vector<ng::text::MetricStatistics> test_run(const ExperimentOptions& options, RunResult& run,
                                                 const nmt::TestSet& test) {
  ng::Generator generator(0);
  LoadedModel loaded = load_model_folder(ModelFolder(run.folder), generator);
  if (!options.device.is_cpu()) loaded.model->to(options.device);
  const auto translate = [&](const std::vector<std::vector<std::int32_t>>& sentences) {
    return translate_sentences(*loaded.model, loaded.tokenizer, sentences,
                               search_options(options.beam), 32, options.device);
  };
  return nmt::test_experiment_run(run, *loaded.model, loaded.tokenizer, test, translate,
                                  experiment_program);
}

}  // namespace

ExperimentBudget experiment_budget(const std::string& name) {
  // Measured with the small preset on 2 cores: a median training step of about 0.11 s, a dev
  // BLEU (greedy, 2000 sentences) of a few seconds, beam-5 test translations of about 20 s per
  // 1000 sentences. Seven runs (Table 2 and Figure 4) then take about 12 minutes in the demo.
  if (name == "tiny")  // with the tiny preset: seconds, to check the whole pipeline
    return {.name = "tiny",
            .steps = 8,
            .figure4_steps = 4,
            .dev_loss_every = 4,
            .dev_bleu_every = 8,
            .test_sentences = 10};
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
  if (name == "paper")  // with the paper preset: the paper's model for 300k steps
    return {.name = "paper",
            .steps = 300000,
            .figure4_steps = 300000,
            .dev_loss_every = 1000,
            .dev_bleu_every = 10000,
            .test_sentences = 0};
  throw ng::Error("gru_nmt experiment: unknown budget '" + name +
                  "'; expected tiny, demo, long or paper");
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
  nmt::check_experiment_corpus(options.corpus, experiment_program);
  const ExperimentBudget& b = options.budget;
  NG_CHECK(b.steps > 0 && b.dev_loss_every > 0 && b.dev_bleu_every > 0 && b.test_sentences >= 0 &&
               (!options.figure4 || b.figure4_steps > 0),
           experiment_program, "the budget needs positive steps and intervals, got steps ", b.steps,
           ", Figure 4 steps ", b.figure4_steps, ", dev loss every ", b.dev_loss_every,
           ", dev BLEU every ", b.dev_bleu_every);
  NG_CHECK(!options.norms.empty(), experiment_program, "no norms to compare");
  for (const auto& norm : options.norms) {
    Settings settings = options.settings;
    settings.model.norm = norm;
    check(settings);  // an Error for an unknown or unfitting norm
  }
  NG_CHECK(options.beam > 0, experiment_program, "the beam must be positive, got ", options.beam);
}

ExperimentResults run_experiment(const ExperimentOptions& options) {
  check_experiment(options);
  const auto start = Clock::now();
  auto say = [&](const std::string& text) {
    if (options.messages != nullptr) *options.messages << text << std::flush;
  };
  ExperimentResults results;
  results.budget = options.budget;
  // One tokenizer for every run, trained once, and the test set.
  const auto inputs =
      nmt::prepare_experiment(options.out, options.corpus, options.settings.model.vocabulary_size,
                              options.budget.test_sentences, experiment_program, options.messages);
  const std::string& tokenizer_path = inputs.tokenizer;
  const nmt::TestSet& test = inputs.test;
  const auto tokenizer = ng::text::SubwordTokenizer::load(tokenizer_path);
  results.test_sentences = static_cast<std::int64_t>(test.sources.size());
  results.bleu_signature = inputs.bleu_signature;

  // Table 2 and Figure 1.
  const auto table2_settings = [&](const std::string& norm) {
    return run_settings(options, norm, 0.0, options.budget.steps);
  };
  auto table2 = nmt::experiment_sweep<ModelFolder>(options.out, options.norms, "", table2_settings,
                                                   experiment_program);
  table2.announce = [&](const examples::SweepRun& run) {
    say("== Table 2, run " + std::to_string(run.index + 1) + " of " + std::to_string(run.count) +
        ": " + run.norm + ", " + std::to_string(options.budget.steps) + " steps\n");
  };
  std::vector<std::vector<ng::text::MetricStatistics>> statistics;
  results.table2 = examples::run_norm_sweep(table2, [&](const examples::SweepRun& sweep_run) {
    RunResult run = train_run(options, tokenizer_path, sweep_run, table2_settings(sweep_run.norm));
    say("   test BLEU, beam " + std::to_string(options.beam) + ", " +
        std::to_string(test.sources.size()) + " sentences\n");
    statistics.push_back(test_run(options, run, test));
    return run;
  });
  nmt::compare_with_layernorm(results.table2, statistics);

  // Table 5 on the dev set.
  const auto dev =
      ng::text::ParallelDataset::load(nmt::corpus_file(options.corpus, "dev.en"),
                                      nmt::corpus_file(options.corpus, "dev.de"), tokenizer, {});
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
    const auto figure4_settings = [&](const std::string& norm) {
      return run_settings(options, norm, 0.2, options.budget.figure4_steps);
    };
    auto figure4 =
        nmt::experiment_sweep<ModelFolder>(options.out, {"layernorm", "rmsnorm"}, ", centre 0.2",
                                           figure4_settings, experiment_program);
    figure4.announce = [&](const examples::SweepRun& run) {
      say("== Figure 4: " + run.norm + " from weights centred at 0.2, " +
          std::to_string(options.budget.figure4_steps) + " steps\n");
    };
    results.figure4 = examples::run_norm_sweep(figure4, [&](const examples::SweepRun& sweep_run) {
      return train_run(options, tokenizer_path, sweep_run, figure4_settings(sweep_run.norm));
    });
  }
  results.total_seconds = seconds_since(start);
  return results;
}

}  // namespace gru_nmt
