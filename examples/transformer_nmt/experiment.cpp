#include "experiment.h"

#include <algorithm>
#include <chrono>

#include "common/progress.h"

namespace transformer_nmt {

namespace {

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

}  // namespace

std::vector<nmt::ExperimentBudget> experiment_budgets() {
  // Measured with the small preset on 2 cores: a median training step of 0.23-0.26 s, and
  // about 14 s a run for its dev losses, its greedy dev BLEU (2000 sentences) and 300 test
  // sentences with beam 4. Six runs of 300 steps (four post-norm, two pre-norm) and the
  // tokenizer took 9.5 minutes; of 250 steps, about 8.
  return {
      // with the tiny preset: seconds, to check the whole pipeline
      {.name = "tiny", .steps = 8, .dev_loss_every = 4, .dev_bleu_every = 8, .test_sentences = 8},
      {.name = "demo",
       .steps = 250,
       .dev_loss_every = 50,
       .dev_bleu_every = 250,
       .test_sentences = 300},
      {.name = "long",
       .steps = 3000,
       .dev_loss_every = 250,
       .dev_bleu_every = 1000,
       .test_sentences = 0},
      // with the base preset: the paper's 300k steps
      {.name = "paper",
       .steps = 300000,
       .dev_loss_every = 1000,
       .dev_bleu_every = 10000,
       .test_sentences = 0}};
}

nmt::ExperimentBudget experiment_budget(const std::string& name) {
  return examples::budget_named(experiment_budgets(), name, "transformer_nmt experiment");
}

Settings shared_run_settings(const ExperimentOptions& options) {
  std::vector<std::string> norms = options.norms;
  for (const auto& norm : options.pre_norms) norms.push_back(norm + " (pre-norm)");
  Settings settings = run_settings(options, "", false);
  settings.model.norm = nmt::norms_per_run(norms);
  return settings;
}

void check_experiment(const ExperimentOptions& options) {
  nmt::check_experiment_options(options, options.pre_norms, false, "transformer_nmt experiment");
}

ExperimentResults run_experiment(const ExperimentOptions& options) {
  check_experiment(options);
  const auto start = std::chrono::steady_clock::now();
  ExperimentResults results;
  const auto inputs = nmt::prepare_experiment(
      options.out, options.corpus, options.settings.model.vocabulary_size, options.budget, results,
      "transformer_nmt experiment", options.messages);
  // Every norm at one placement, trained and tested, then compared with LayerNorm.
  const auto group = [&](const std::vector<std::string>& norms, bool pre_norm) {
    return nmt::run_norm_group(
        options, inputs, norms, pre_norm ? ", pre-norm" : "",
        pre_norm ? "pre-norm" : "Table 4 (post-norm)",
        [&](const std::string& norm) { return run_settings(options, norm, pre_norm); },
        /*test=*/true);
  };
  results.table4 = group(options.norms, false);
  if (!options.pre_norms.empty()) results.pre_norm = group(options.pre_norms, true);
  results.total_seconds = examples::seconds_since(start);
  return results;
}

}  // namespace transformer_nmt
