#include "experiment.h"

#include <chrono>

#include "common/progress.h"
#include "text/parallel_dataset.h"
#include "text/subword_tokenizer.h"

namespace gru_nmt {

namespace ng = normgrad;

namespace {

// The settings of one run: the experiment's base with this run's norm, centre and budget.
Settings run_settings(const ExperimentOptions& options, const std::string& norm, double init_center,
                      std::int64_t steps) {
  Settings settings = options.settings;
  settings.model.norm = norm;
  settings.model.init_center = init_center;
  nmt::set_run_budget(settings.training, options.corpus, options.budget, steps);
  return settings;
}

}  // namespace

std::vector<ExperimentBudget> experiment_budgets() {
  // Measured with the small preset on 2 cores: a median training step of about 0.11 s, a dev
  // BLEU (greedy, 2000 sentences) of a few seconds, beam-5 test translations of about 20 s per
  // 1000 sentences. Seven runs (Table 2 and Figure 4) then take about 12 minutes in the demo.
  return {// with the tiny preset: seconds, to check the whole pipeline
          {.name = "tiny",
           .steps = 8,
           .figure4_steps = 4,
           .dev_loss_every = 4,
           .dev_bleu_every = 8,
           .test_sentences = 10},
          {.name = "demo",
           .steps = 600,
           .figure4_steps = 600,
           .dev_loss_every = 100,
           .dev_bleu_every = 300,
           .test_sentences = 500},
          {.name = "long",
           .steps = 3000,
           .figure4_steps = 3000,
           .dev_loss_every = 250,
           .dev_bleu_every = 500,
           .test_sentences = 0},
          // with the paper preset: the paper's model for 300k steps
          {.name = "paper",
           .steps = 300000,
           .figure4_steps = 300000,
           .dev_loss_every = 1000,
           .dev_bleu_every = 10000,
           .test_sentences = 0}};
}

ExperimentBudget experiment_budget(const std::string& name) {
  return examples::budget_named(experiment_budgets(), name, "gru_nmt experiment");
}

Settings shared_run_settings(const ExperimentOptions& options) {
  Settings settings = run_settings(options, "", 0.0, options.budget.steps);
  settings.model.norm = nmt::norms_per_run(options.norms);
  return settings;
}

void check_experiment(const ExperimentOptions& options) {
  nmt::check_experiment_options(options, {}, options.figure4, "gru_nmt experiment");
}

ExperimentResults run_experiment(const ExperimentOptions& options) {
  check_experiment(options);
  const auto start = std::chrono::steady_clock::now();
  ExperimentResults results;
  // One tokenizer for every run, trained once, and the test set.
  const auto inputs =
      nmt::prepare_experiment(options.out, options.corpus, options.settings.model.vocabulary_size,
                              options.budget, results, "gru_nmt experiment", options.messages);

  // Table 2 and Figure 1.
  results.table2 = nmt::run_norm_group(
      options, inputs, options.norms, "", "Table 2",
      [&](const std::string& norm) {
        return run_settings(options, norm, 0.0, options.budget.steps);
      },
      /*test=*/true);

  // Table 5 on the dev set.
  const auto tokenizer = ng::text::SubwordTokenizer::load(inputs.tokenizer);
  const auto dev =
      ng::text::ParallelDataset::load(nmt::corpus_file(options.corpus, "dev.en"),
                                      nmt::corpus_file(options.corpus, "dev.de"), tokenizer, {});
  for (const RunResult& run : results.table2) {
    if (run.norm != "none" && run.norm != "layernorm" && run.norm != "rmsnorm") continue;
    if (options.messages != nullptr)
      *options.messages << "== Table 5: " << run.norm << "\n" << std::flush;
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
    results.figure4 = nmt::run_norm_group(
        options, inputs, {"layernorm", "rmsnorm"}, ", centre 0.2",
        "Figure 4 (weights centred at 0.2)",
        [&](const std::string& norm) {
          return run_settings(options, norm, 0.2, options.budget.figure4_steps);
        },
        /*test=*/false);
  }
  results.total_seconds = examples::seconds_since(start);
  return results;
}

}  // namespace gru_nmt
