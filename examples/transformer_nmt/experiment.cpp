#include "experiment.h"

#include <algorithm>
#include <chrono>

#include "common/norm_sweep.h"
#include "model_folder.h"
#include "nmt/experiment_report.h"
#include "trainer.h"
#include "translation.h"

namespace transformer_nmt {

namespace ng = normgrad;

namespace {

using Clock = std::chrono::steady_clock;

// The settings of one run: the experiment's base with this run's norm, placement and budget,
// its warm-up cut to a quarter of the steps when the preset's is longer.
Settings run_settings(const ExperimentOptions& options, const std::string& norm, bool pre_norm) {
  Settings settings = options.settings;
  settings.model.norm = norm;
  settings.model.pre_norm = pre_norm;
  auto& t = settings.training;
  nmt::set_run_budget(t, options.corpus, options.budget, options.budget.steps);
  t.warmup_steps = std::min(t.warmup_steps, std::max<std::int64_t>(1, options.budget.steps / 4));
  return settings;
}

// Trains one run of a sweep into its folder (or continues it, or takes it as it is), then
// translates the test sources with its best weights; returns their BLEU statistics.
RunResult train_and_test(const ExperimentOptions& options, const std::string& tokenizer_path,
                         const nmt::TestSet& test, const examples::SweepRun& sweep_run,
                         const Settings& settings,
                         std::vector<std::vector<ng::text::MetricStatistics>>& statistics) {
  RunResult run = nmt::train_experiment_run<ModelFolder>(
      sweep_run, settings, TrainOptions{.device = options.device, .messages = options.messages},
      tokenizer_path, [](const TrainOptions& train_options) { return train(train_options); },
      experiment_program);

  if (options.messages != nullptr)
    *options.messages << "   test BLEU, beam " << options.beam << ", " << test.sources.size()
                      << " sentences\n"
                      << std::flush;
  ng::Generator generator(0);
  LoadedModel loaded = load_model_folder(ModelFolder(run.folder), generator);
  if (!options.device.is_cpu()) loaded.model->to(options.device);
  const auto translate = [&](const std::vector<std::vector<std::int32_t>>& sentences) {
    return translate_sentences(*loaded.model, loaded.tokenizer, sentences,
                               search_options(options.beam), 32, options.device);
  };
  statistics.push_back(nmt::test_experiment_run(run, *loaded.model, loaded.tokenizer, test,
                                                translate, experiment_program));
  return run;
}

// Every norm of `norms` at one placement, trained and tested, then compared with LayerNorm.
std::vector<RunResult> run_group(const ExperimentOptions& options,
                                 const nmt::ExperimentInputs& inputs,
                                 const std::vector<std::string>& norms, bool pre_norm) {
  const auto settings_of = [&](const std::string& norm) {
    return run_settings(options, norm, pre_norm);
  };
  auto sweep = nmt::experiment_sweep<ModelFolder>(options.out, norms, pre_norm ? ", pre-norm" : "",
                                                  settings_of, experiment_program);
  sweep.announce = [&](const examples::SweepRun& run) {
    if (options.messages != nullptr)
      *options.messages << "== " << (pre_norm ? "pre-norm" : "Table 4 (post-norm)") << ", run "
                        << run.index + 1 << " of " << run.count << ": " << run.norm << ", "
                        << options.budget.steps << " steps\n"
                        << std::flush;
  };
  std::vector<std::vector<ng::text::MetricStatistics>> statistics;
  std::vector<RunResult> runs =
      examples::run_norm_sweep(sweep, [&](const examples::SweepRun& sweep_run) {
        return train_and_test(options, inputs.tokenizer, inputs.test, sweep_run,
                              settings_of(sweep_run.norm), statistics);
      });
  nmt::compare_with_layernorm(runs, statistics);
  return runs;
}

}  // namespace

nmt::ExperimentBudget experiment_budget(const std::string& name) {
  // Measured with the small preset on 2 cores: a median training step of 0.23-0.26 s, and
  // about 14 s a run for its dev losses, its greedy dev BLEU (2000 sentences) and 300 test
  // sentences with beam 4. Six runs of 300 steps (four post-norm, two pre-norm) and the
  // tokenizer took 9.5 minutes; of 250 steps, about 8.
  if (name == "tiny")  // with the tiny preset: seconds, to check the whole pipeline
    return {
        .name = "tiny", .steps = 8, .dev_loss_every = 4, .dev_bleu_every = 8, .test_sentences = 8};
  if (name == "demo")
    return {.name = "demo",
            .steps = 250,
            .dev_loss_every = 50,
            .dev_bleu_every = 250,
            .test_sentences = 300};
  if (name == "long")
    return {.name = "long",
            .steps = 3000,
            .dev_loss_every = 250,
            .dev_bleu_every = 1000,
            .test_sentences = 0};
  if (name == "paper")  // with the base preset: the paper's 300k steps
    return {.name = "paper",
            .steps = 300000,
            .dev_loss_every = 1000,
            .dev_bleu_every = 10000,
            .test_sentences = 0};
  throw ng::Error(std::string(experiment_program) + ": unknown budget '" + name +
                  "'; expected tiny, demo, long or paper");
}

Settings shared_run_settings(const ExperimentOptions& options) {
  std::string norms;
  for (const auto& norm : options.norms) norms += (norms.empty() ? "" : ", ") + norm;
  for (const auto& norm : options.pre_norms) norms += ", " + norm + " (pre-norm)";
  Settings settings = run_settings(options, "", false);
  settings.model.norm = "per run: " + norms;
  return settings;
}

void check_experiment(const ExperimentOptions& options) {
  nmt::check_experiment_corpus(options.corpus, experiment_program);
  nmt::check_budget(options.budget, experiment_program);
  NG_CHECK(!options.norms.empty(), experiment_program, "no norms to compare");
  for (const auto* norms : {&options.norms, &options.pre_norms}) {
    for (const auto& norm : *norms) {
      Settings settings = options.settings;
      settings.model.norm = norm;
      check(settings);  // an Error for an unknown or unfitting norm
    }
  }
  NG_CHECK(options.beam > 0, experiment_program, "the beam must be positive, got ", options.beam);
}

ExperimentResults run_experiment(const ExperimentOptions& options) {
  check_experiment(options);
  const auto start = Clock::now();
  ExperimentResults results;
  results.budget = options.budget;
  const auto inputs =
      nmt::prepare_experiment(options.out, options.corpus, options.settings.model.vocabulary_size,
                              options.budget.test_sentences, experiment_program, options.messages);
  results.test_sentences = static_cast<std::int64_t>(inputs.test.sources.size());
  results.bleu_signature = inputs.bleu_signature;

  results.table4 = run_group(options, inputs, options.norms, false);
  if (!options.pre_norms.empty())
    results.pre_norm = run_group(options, inputs, options.pre_norms, true);
  results.total_seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return results;
}

}  // namespace transformer_nmt
