// transformer_nmt: the RMSNorm paper's Transformer translation model, trained, used and scored
// from the command line, in the manner of fairseq and Marian.
//
//   transformer_nmt train --model out/transformer_nmt/rmsnorm --norm rmsnorm --train-source ...
//   transformer_nmt average --model out/transformer_nmt/rmsnorm --last 5
//   transformer_nmt translate --model out/transformer_nmt/rmsnorm < test.en > test.hyp
//   transformer_nmt score --model out/transformer_nmt/rmsnorm --source test.en --target test.de
//   transformer_nmt experiment --corpus out/corpus/debian-en-de --out out/transformer_nmt
//                                                                        (the paper's Table 4)
#include <CLI/CLI.hpp>
#include <cstdint>
#include <iostream>
#include <string>

#include "common/command_flags.h"
#include "common/wait_policy.h"
#include "experiment.h"
#include "nmt/commands.h"
#include "nmt/train_command.h"
#include "program.h"
#include "report.h"

int main(int argc, char** argv) {
  using transformer_nmt::Program;
  examples::default_to_passive_waiting(argv);
  CLI::App app{
      "transformer_nmt: the Transformer encoder-decoder (Vaswani et al. 2017) with any "
      "normaliser"};
  nmt::CommandLine command_line(app, "transformer_nmt");

  // ---- train
  nmt::TrainCommand<transformer_nmt::Settings> train(app, "transformer_nmt",
                                                     {"tiny", "cpu", "small", "base"});
  auto& flags = train.flags();
  flags.add("--norm", NMT_SETTING(model.norm),
            "none, layernorm, rmsnorm, prmsnorm:p or l2norm (every norm slot)");
  std::string placement = "post";
  auto* placement_option =
      train.command()
          ->add_option("--placement", placement, "post (x = Norm(x + F(x)), the paper's) or pre")
          ->check(CLI::IsMember({"post", "pre"}));
  flags.add("--vocabulary", NMT_SETTING(model.vocabulary_size), "Joint BPE vocabulary size");
  flags.add("--model-size", NMT_SETTING(model.model_size), "d_model");
  flags.add("--feed-forward", NMT_SETTING(model.feed_forward_size), "Feed-forward inner size");
  flags.add("--heads", NMT_SETTING(model.heads), "Attention heads");
  flags.add("--encoder-layers", NMT_SETTING(model.encoder_layers), "Encoder layers");
  flags.add("--decoder-layers", NMT_SETTING(model.decoder_layers), "Decoder layers");
  flags.add("--dropout", NMT_SETTING(model.dropout), "Dropout (embeddings, sublayers, attention)");
  examples::precision_flag(flags.add("--precision", NMT_SETTING(model.precision), ""));
  bool untied = false;
  auto* untied_option = train.command()->add_flag(
      "--untied-embeddings", untied,
      "Separate source, target and output embeddings (default: one table for all three)");
  flags.add("--batch-tokens", NMT_SETTING(training.batch_tokens),
            "Tokens per batch (rows x the longest side)");
  flags.add("--warmup", NMT_SETTING(training.warmup_steps), "Warm-up steps of the schedule");

  // ---- average
  auto* average = app.add_subcommand(
      "average", "Average the weights of the folder's last training states into one file");
  std::string average_folder, average_output = "averaged.safetensors";
  std::int64_t last = 5;
  average->add_option("--model", average_folder, "A model folder written by train")->required();
  average->add_option("--last", last, "How many of the newest training states")
      ->check(CLI::PositiveNumber);
  average->add_option("--output", average_output, "File name in the folder");

  // ---- translate and score
  nmt::TranslateCommand translate(app, 4, "Translations per sentence, as Moses's n-best lines");
  bool uncached = false;
  translate.command->add_flag("--uncached", uncached,
                              "Recompute the whole prefix at every step (the cache's slow twin)");
  nmt::ScoreCommand score(app);
  for (auto [command, weights] :
       {std::pair{translate.command, &translate.weights}, std::pair{score.command, &score.weights}})
    command->add_option("--weights", *weights,
                        "Weights to use: a file in the folder (averaged.safetensors) or a path "
                        "(default: best.safetensors, else model.safetensors)");

  // ---- experiment
  transformer_nmt::ExperimentOptions experiment_options;
  nmt::ExperimentCommand experiment(
      app, "transformer_nmt", experiment_options,
      {.command = "The paper's Table 4: every norm trained, tested and compared, with a report",
       .budget = "tiny (seconds, with --preset tiny), demo (about 8 minutes on 2 cores), "
                 "long or paper (the paper's steps, with --preset base)",
       .budgets = examples::budget_names(transformer_nmt::experiment_budgets()),
       .presets = {"tiny", "cpu", "small", "base"},
       .preset = "Model and training preset of every run: small (the default), tiny, cpu or base",
       .steps = "Steps of each run (replaces the budget's)",
       .norms = "The norms of Table 4 (post-norm), comma-separated"});
  bool no_pre_norm = false;
  experiment.command
      ->add_option("--pre-norms", experiment_options.pre_norms,
                   "The norms also trained pre-norm, comma-separated")
      ->delimiter(',');
  experiment.command->add_flag("--no-pre-norm", no_pre_norm, "Leave out the pre-norm runs");

  CLI11_PARSE(app, argc, argv);
  return command_line.run([&](normgrad::Device device) {
    if (train.parsed()) {
      auto settings = train.settings(transformer_nmt::preset(train.preset()));
      if (placement_option->count() > 0) settings.model.pre_norm = placement == "pre";
      if (untied_option->count() > 0) settings.model.tie_embeddings = !untied;
      return train.run(settings, device, transformer_nmt::train, command_line.threads());
    }
    if (experiment.parsed()) {
      experiment.apply(experiment_options, transformer_nmt::preset(experiment.preset),
                       transformer_nmt::experiment_budget(experiment.budget), device);
      if (no_pre_norm) experiment_options.pre_norms.clear();
      return nmt::run_experiment_command(experiment_options);
    }
    if (average->parsed()) {
      const transformer_nmt::ModelFolder folder(average_folder);
      const auto averaged = transformer_nmt::average_checkpoints(folder, last, average_output);
      std::cerr << "averaged the training states of steps";
      for (const auto step : averaged) std::cerr << " " << step;
      std::cerr << " into " << folder.file(average_output) << "\n";
      return 0;
    }
    if (translate.parsed()) {
      return translate.run<Program>(
          device, [&](auto& model, const auto& source, const auto& options) {
            return transformer_nmt::translate_batch(model, source, options, !uncached);
          });
    }
    return score.run<Program>(device);
  });
}
