// gru_nmt: the RMSNorm paper's RNNSearch translation model, trained, used and scored from the
// command line, in the manner of Nematus and Marian.
//
//   gru_nmt train --model out/gru_nmt/rmsnorm --norm rmsnorm --train-source train.en ...
//   gru_nmt translate --model out/gru_nmt/rmsnorm < test.en > test.hyp
//   gru_nmt score --model out/gru_nmt/rmsnorm --source test.en --target test.de
//   gru_nmt experiment --corpus out/corpus/debian-en-de --out out/gru_nmt   (the paper's tables)
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <iostream>
#include <string>

#include "common/wait_policy.h"
#include "data/text_file.h"
#include "experiment.h"
#include "figures.h"
#include "model_folder.h"
#include "nmt/command_line.h"
#include "nn/atomic_file.h"
#include "report.h"
#include "scoring.h"
#include "trainer.h"
#include "translation.h"

namespace {

namespace ng = normgrad;

// Runs the experiment and writes its CSV files, figures and report.md into options.out.
int run_experiment_command(const gru_nmt::ExperimentOptions& options) {
  const std::string settings = gru_nmt::describe(gru_nmt::shared_run_settings(options));
  std::cerr << settings;
  const auto results = gru_nmt::run_experiment(options);
  const std::string out = options.out;
  gru_nmt::write_table2_csv(out + "/table2.csv", results);
  gru_nmt::write_table5_csv(out + "/table5.csv", results);
  gru_nmt::write_curves_csv(out + "/curves.csv", results);
  const auto figures = gru_nmt::draw_figures(out, results);
  if (!figures.message.empty()) std::cerr << figures.message << "\n";
  const gru_nmt::ReportContext context{.date = nmt::today(),
                                       .machine = nmt::machine_description(options.device),
                                       .corpus = options.corpus,
                                       .settings = settings,
                                       .figures = figures.files};
  nmt::publish_report(out, gru_nmt::report_markdown(results, context), "gru_nmt experiment");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  examples::default_to_passive_waiting(argv);
  CLI::App app{
      "gru_nmt: RNNSearch (Nematus v0.3's GRU encoder-decoder with attention) with any normaliser"};
  app.require_subcommand(1);
  app.fallthrough();  // --device and --threads may follow the subcommand
  std::string device_name = "cpu";
  int threads = 0;
  app.add_option("--device", device_name, "cpu or cuda")->check(CLI::IsMember({"cpu", "cuda"}));
  app.add_option("--threads", threads, "CPU threads (default: all cores)")
      ->check(CLI::PositiveNumber);

  // ---- train
  auto* train = app.add_subcommand("train", "Train a model into a model folder (or --resume one)");
  std::string folder, preset_name = "cpu";
  gru_nmt::TrainOptions train_options;
  gru_nmt::Settings overrides = gru_nmt::preset("cpu");
  bool resume = false, no_bar = false;
  std::int64_t steps = 0;
  double seconds = -1;
  train->add_option("--model", folder, "The model folder to create (or resume)")->required();
  train->add_option("--preset", preset_name, "cpu (the default), small or paper")
      ->check(CLI::IsMember({"cpu", "small", "paper"}));
  train->add_flag("--resume", resume, "Continue the folder's run from its newest training state");
  train->add_option("--train-source", overrides.training.train_source,
                    "Training source text, one sentence a line");
  train->add_option("--train-target", overrides.training.train_target,
                    "Training target text, aligned");
  train->add_option("--dev-source", overrides.training.dev_source,
                    "Dev source text, for dev loss and BLEU");
  train->add_option("--dev-target", overrides.training.dev_target,
                    "Dev target text (the untouched reference)");
  auto* norm = train->add_option("--norm", overrides.model.norm,
                                 "none, layernorm, l2norm, rmsnorm, prmsnorm:p or weightnorm");
  auto* vocabulary = train->add_option("--vocabulary", overrides.model.vocabulary_size,
                                       "Joint BPE vocabulary size");
  auto* embedding =
      train->add_option("--embedding", overrides.model.embedding_size, "Embedding size");
  auto* hidden = train->add_option("--hidden", overrides.model.hidden_size, "GRU state size");
  auto* tie = train->add_flag("--tie-target-embeddings", overrides.model.tie_target_embeddings,
                              "The output layer's weight is the target embedding");
  auto* center = train->add_option("--init-center", overrides.model.init_center,
                                   "Shift of every weight's mean at init");
  auto* dropout_embedding =
      train->add_option("--dropout-embedding", overrides.model.dropout_embedding,
                        "Dropout on the embeddings, one mask per sentence (0: none)");
  auto* dropout_hidden =
      train->add_option("--dropout-hidden", overrides.model.dropout_hidden,
                        "Dropout on the recurrent states, context and deep output (0: none)");
  auto* batch =
      train->add_option("--batch", overrides.training.batch_sentences, "Sentences per batch");
  auto* max_length = train->add_option("--max-length", overrides.training.max_length,
                                       "Longest training pair, in subwords");
  auto* lr = train->add_option("--lr", overrides.training.learning_rate, "Adam's learning rate");
  auto* smoothing =
      train->add_option("--label-smoothing", overrides.training.label_smoothing, "Label smoothing");
  auto* clip = train->add_option("--clip-norm", overrides.training.clip_norm,
                                 "Global gradient norm clip (0: none)");
  train->add_option("--steps", steps, "Training steps (the budget)")->check(CLI::PositiveNumber);
  train->add_option("--seconds", seconds, "Wall-clock budget of this run (0: none)")
      ->check(CLI::NonNegativeNumber);
  auto* dev_loss = train->add_option("--dev-loss-every", overrides.training.dev_loss_every,
                                     "Dev loss interval (steps)");
  auto* dev_bleu = train->add_option("--dev-bleu-every", overrides.training.dev_bleu_every,
                                     "Dev BLEU interval (steps)");
  auto* dev_beam =
      train->add_option("--dev-beam", overrides.training.dev_beam, "Beam for dev BLEU (1: greedy)");
  auto* patience =
      train->add_option("--patience", overrides.training.patience,
                        "Dev BLEU evaluations without a new best before stopping (0: never)");
  auto* checkpoint = train->add_option("--checkpoint-every", overrides.training.checkpoint_every,
                                       "Training state interval");
  auto* keep = train->add_option("--keep-checkpoints", overrides.training.keep_checkpoints,
                                 "Training states kept");
  auto* seed = train->add_option("--seed", overrides.training.seed,
                                 "Seed of initialisation and batch order");
  train->add_option("--tokenizer", train_options.tokenizer,
                    "A sentencepiece model to use instead of training one (e.g. from spm_train)");
  train->add_flag("--no-progress-bar", no_bar, "Plain progress lines even on a terminal");

  // ---- translate
  auto* translate =
      app.add_subcommand("translate", "Translate stdin to stdout with a trained model folder");
  std::string translate_folder;
  std::int64_t beam = 5, n_best = 1, translate_batch = 32;
  bool greedy = false;
  translate->add_option("--model", translate_folder, "A model folder written by train")->required();
  translate->add_option("--beam", beam, "Beam width")->check(CLI::Range(1, 1000));
  translate
      ->add_option("--n-best", n_best, "Translations per sentence, tab-separated with their scores")
      ->check(CLI::Range(1, 1000));
  translate->add_flag("--greedy", greedy, "Greedy search (a beam of 1)");
  translate->add_option("--batch", translate_batch, "Sentences per batch")
      ->check(CLI::PositiveNumber);

  // ---- score
  auto* score =
      app.add_subcommand("score", "Log-probabilities of sentence pairs under a trained model");
  std::string score_folder, score_source, score_target;
  score->add_option("--model", score_folder, "A model folder written by train")->required();
  score->add_option("--source", score_source, "Source sentences")
      ->required()
      ->check(CLI::ExistingFile);
  score->add_option("--target", score_target, "Their translations, aligned")
      ->required()
      ->check(CLI::ExistingFile);

  // ---- experiment
  auto* experiment = app.add_subcommand(
      "experiment",
      "The paper's comparisons: Table 2, Figure 1, Table 5 and Figure 4, with a report");
  gru_nmt::ExperimentOptions experiment_options;
  experiment_options.corpus = "out/corpus/debian-en-de";
  experiment_options.out = "out/gru_nmt";
  std::string budget_name = "demo", experiment_preset = "small";
  std::int64_t experiment_steps = 0, figure4_steps = 0, test_sentences = -1;
  bool no_figure4 = false;
  experiment->add_option("--corpus", experiment_options.corpus,
                         "Folder with train, dev and test .en/.de (scripts/build_corpus)");
  experiment->add_option("--out", experiment_options.out,
                         "Where the runs, CSV files, figures and report.md go");
  experiment->add_option("--budget", budget_name, "demo (about 12 minutes on 2 cores) or long")
      ->check(CLI::IsMember({"demo", "long"}));
  experiment
      ->add_option("--preset", experiment_preset,
                   "Model and training preset of every run: small (the default), cpu or paper")
      ->check(CLI::IsMember({"cpu", "small", "paper"}));
  experiment
      ->add_option("--steps", experiment_steps, "Steps of each Table 2 run (replaces the budget's)")
      ->check(CLI::PositiveNumber);
  experiment->add_option("--figure4-steps", figure4_steps, "Steps of each Figure 4 run")
      ->check(CLI::PositiveNumber);
  experiment->add_option("--test-sentences", test_sentences, "Test lines to translate (0: all)")
      ->check(CLI::NonNegativeNumber);
  experiment
      ->add_option("--norms", experiment_options.norms, "The norms of Table 2, comma-separated")
      ->delimiter(',');
  experiment->add_flag("--no-figure4", no_figure4, "Leave out the Figure 4 runs");
  experiment->add_option("--beam", experiment_options.beam, "Beam for test BLEU")
      ->check(CLI::Range(1, 1000));

  CLI11_PARSE(app, argc, argv);
  try {
    const ng::Device device = nmt::parse_device(device_name, "gru_nmt");
    if (threads > 0) ng::set_num_threads(threads);
    if (train->parsed()) {
      gru_nmt::Settings settings = gru_nmt::preset(preset_name);
      // Flags given on the command line replace the preset's values.
      auto take = [](CLI::Option* option, auto& target, const auto& value) {
        if (option->count() > 0) target = value;
      };
      take(norm, settings.model.norm, overrides.model.norm);
      take(vocabulary, settings.model.vocabulary_size, overrides.model.vocabulary_size);
      take(embedding, settings.model.embedding_size, overrides.model.embedding_size);
      take(hidden, settings.model.hidden_size, overrides.model.hidden_size);
      take(tie, settings.model.tie_target_embeddings, overrides.model.tie_target_embeddings);
      take(center, settings.model.init_center, overrides.model.init_center);
      take(dropout_embedding, settings.model.dropout_embedding, overrides.model.dropout_embedding);
      take(dropout_hidden, settings.model.dropout_hidden, overrides.model.dropout_hidden);
      take(batch, settings.training.batch_sentences, overrides.training.batch_sentences);
      take(max_length, settings.training.max_length, overrides.training.max_length);
      take(lr, settings.training.learning_rate, overrides.training.learning_rate);
      take(smoothing, settings.training.label_smoothing, overrides.training.label_smoothing);
      take(clip, settings.training.clip_norm, overrides.training.clip_norm);
      take(dev_loss, settings.training.dev_loss_every, overrides.training.dev_loss_every);
      take(dev_bleu, settings.training.dev_bleu_every, overrides.training.dev_bleu_every);
      take(dev_beam, settings.training.dev_beam, overrides.training.dev_beam);
      take(patience, settings.training.patience, overrides.training.patience);
      take(checkpoint, settings.training.checkpoint_every, overrides.training.checkpoint_every);
      take(keep, settings.training.keep_checkpoints, overrides.training.keep_checkpoints);
      take(seed, settings.training.seed, overrides.training.seed);
      settings.training.train_source = overrides.training.train_source;
      settings.training.train_target = overrides.training.train_target;
      settings.training.dev_source = overrides.training.dev_source;
      settings.training.dev_target = overrides.training.dev_target;
      if (steps > 0) settings.training.max_steps = steps;
      if (seconds >= 0) settings.training.max_seconds = seconds;
      if (!resume) {
        NG_CHECK(!settings.training.train_source.empty() &&
                     !settings.training.train_target.empty() &&
                     !settings.training.dev_source.empty() && !settings.training.dev_target.empty(),
                 "gru_nmt train",
                 "a new model needs --train-source, --train-target, --dev-source and --dev-target");
        gru_nmt::check(settings);
        std::cerr << gru_nmt::describe(settings);
      }
      train_options.folder = folder;
      train_options.settings = settings;
      train_options.resume = resume;
      train_options.resume_max_steps = steps;
      train_options.resume_max_seconds = seconds;
      train_options.device = device;
      train_options.progress_bar = !no_bar && isatty(STDERR_FILENO);
      train_options.messages = &std::cerr;
      const auto summary = gru_nmt::train(train_options);
      std::cerr << "best dev BLEU: "
                << (summary.best_bleu < 0 ? std::string("not measured")
                                          : std::to_string(summary.best_bleu))
                << "\n";
      return 0;
    }
    if (experiment->parsed()) {
      experiment_options.settings = gru_nmt::preset(experiment_preset);
      experiment_options.budget = gru_nmt::experiment_budget(budget_name);
      if (experiment_steps > 0) experiment_options.budget.steps = experiment_steps;
      if (figure4_steps > 0) experiment_options.budget.figure4_steps = figure4_steps;
      if (test_sentences >= 0) experiment_options.budget.test_sentences = test_sentences;
      experiment_options.figure4 = !no_figure4;
      experiment_options.device = device;
      experiment_options.messages = &std::cerr;
      gru_nmt::check_experiment(experiment_options);
      return run_experiment_command(experiment_options);
    }
    ng::Generator generator(0);
    const bool translating = translate->parsed();
    const gru_nmt::ModelFolder model_folder(translating ? translate_folder : score_folder);
    auto loaded = gru_nmt::load_model_folder(model_folder, generator);
    if (!device.is_cpu()) loaded.model->to(device);
    if (translating) {
      const std::int64_t width = greedy ? 1 : beam;
      NG_CHECK(n_best <= width, "gru_nmt translate", "--n-best ", n_best, " is more than the beam ",
               width);
      const auto lines = nmt::read_stdin_lines();
      std::vector<std::vector<std::int32_t>> sources;
      for (const auto& line : lines) sources.push_back(loaded.tokenizer.encode(line));
      const ng::decoding::BeamSearchOptions options = gru_nmt::search_options(width, n_best);
      const auto translations = gru_nmt::translate_n_best(*loaded.model, loaded.tokenizer, sources,
                                                          options, translate_batch, device);
      nmt::write_translations(std::cout, translations, n_best);
      return 0;
    }
    const auto sources = ng::data::read_text_lines(score_source);
    const auto targets = ng::data::read_text_lines(score_target);
    nmt::write_scores(std::cout, gru_nmt::score_pairs(*loaded.model, loaded.tokenizer, sources,
                                                      targets, 32, device));
    return 0;
  } catch (const std::exception& error) {
    std::cerr << "gru_nmt: " << error.what() << "\n";
    return 1;
  }
}
