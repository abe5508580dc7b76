// gru_nmt: the RMSNorm paper's RNNSearch translation model, trained, used and scored from the
// command line, in the manner of Nematus and Marian.
//
//   gru_nmt train --model out/gru_nmt/rmsnorm --norm rmsnorm --train-source train.en ...
//   gru_nmt translate --model out/gru_nmt/rmsnorm < test.en > test.hyp
//   gru_nmt score --model out/gru_nmt/rmsnorm --source test.en --target test.de
//   gru_nmt experiment --corpus out/corpus/debian-en-de --out out/gru_nmt   (the paper's tables)
#include <CLI/CLI.hpp>
#include <cstdint>

#include "common/command_flags.h"
#include "common/wait_policy.h"
#include "experiment.h"
#include "nmt/commands.h"
#include "nmt/train_command.h"
#include "program.h"
#include "report.h"

int main(int argc, char** argv) {
  examples::default_to_passive_waiting(argv);
  CLI::App app{
      "gru_nmt: RNNSearch (Nematus v0.3's GRU encoder-decoder with attention) with any normaliser"};
  nmt::CommandLine command_line(app, "gru_nmt");

  // ---- train
  nmt::TrainCommand<gru_nmt::Settings> train(app, "gru_nmt", {"tiny", "cpu", "small", "paper"});
  auto& flags = train.flags();
  flags.add("--norm", NMT_SETTING(model.norm),
            "none, layernorm, l2norm, rmsnorm, prmsnorm:p or weightnorm");
  flags.add("--vocabulary", NMT_SETTING(model.vocabulary_size), "Joint BPE vocabulary size");
  flags.add("--embedding", NMT_SETTING(model.embedding_size), "Embedding size");
  flags.add("--hidden", NMT_SETTING(model.hidden_size), "GRU state size");
  flags.add_flag("--tie-target-embeddings", NMT_SETTING(model.tie_target_embeddings),
                 "The output layer's weight is the target embedding");
  flags.add("--init-center", NMT_SETTING(model.init_center),
            "Shift of every weight's mean at init");
  flags.add("--dropout-embedding", NMT_SETTING(model.dropout_embedding),
            "Dropout on the embeddings, one mask per sentence (0: none)");
  flags.add("--dropout-hidden", NMT_SETTING(model.dropout_hidden),
            "Dropout on the recurrent states, context and deep output (0: none)");
  examples::precision_flag(flags.add("--precision", NMT_SETTING(model.precision), ""));
  flags.add("--batch", NMT_SETTING(training.batch_sentences), "Sentences per batch");

  // ---- translate and score
  nmt::TranslateCommand translate(app, 5,
                                  "Translations per sentence, tab-separated with their scores");
  nmt::ScoreCommand score(app);

  // ---- experiment
  gru_nmt::ExperimentOptions experiment_options;
  nmt::ExperimentCommand experiment(
      app, "gru_nmt", experiment_options,
      {.command = "The paper's comparisons: Table 2, Figure 1, Table 5 and Figure 4, with a report",
       .budget = "tiny (seconds, with --preset tiny), demo (about 12 minutes on 2 cores), "
                 "long or paper (the paper's steps, with --preset paper)",
       .budgets = examples::budget_names(gru_nmt::experiment_budgets()),
       .presets = {"tiny", "cpu", "small", "paper"},
       .preset = "Model and training preset of every run: small (the default), tiny, cpu or paper",
       .steps = "Steps of each Table 2 run (replaces the budget's)",
       .norms = "The norms of Table 2, comma-separated"});
  std::int64_t figure4_steps = 0;
  bool no_figure4 = false;
  experiment.command->add_option("--figure4-steps", figure4_steps, "Steps of each Figure 4 run")
      ->check(CLI::PositiveNumber);
  experiment.command->add_flag("--no-figure4", no_figure4, "Leave out the Figure 4 runs");

  CLI11_PARSE(app, argc, argv);
  return command_line.run([&](normgrad::Device device) {
    if (train.parsed())
      return train.run(train.settings(gru_nmt::preset(train.preset())), device, gru_nmt::train,
                       command_line.threads());
    if (experiment.parsed()) {
      experiment.apply(experiment_options, gru_nmt::preset(experiment.preset),
                       gru_nmt::experiment_budget(experiment.budget), device);
      if (figure4_steps > 0) experiment_options.budget.figure4_steps = figure4_steps;
      experiment_options.figure4 = !no_figure4;
      return nmt::run_experiment_command(experiment_options);
    }
    if (translate.parsed()) return translate.run<gru_nmt::Program>(device);
    return score.run<gru_nmt::Program>(device);
  });
}
