// gru_nmt: the RMSNorm paper's RNNSearch translation model, trained, used and scored from the
// command line, in the manner of Nematus and Marian.
//
//   gru_nmt train --model out/gru_nmt/rmsnorm --norm rmsnorm --train-source train.en ...
//   gru_nmt translate --model out/gru_nmt/rmsnorm < test.en > test.hyp
//   gru_nmt score --model out/gru_nmt/rmsnorm --source test.en --target test.de
//   gru_nmt experiment --corpus out/corpus/debian-en-de --out out/gru_nmt   (the paper's tables)
#include <CLI/CLI.hpp>
#include <iostream>
#include <string>

#include "common/command_flags.h"
#include "common/distributed_run.h"
#include "common/wait_policy.h"
#include "text/text_file.h"
#include "experiment.h"
#include "figures.h"
#include "io/atomic_file.h"
#include "model_folder.h"
#include "nmt/command_line.h"
#include "nmt/train_command.h"
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
  nmt::TrainCommand<gru_nmt::Settings> train_command(train, "gru_nmt",
                                                     {"tiny", "cpu", "small", "paper"});
  auto& flags = train_command.flags();
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
  std::string budget_name = "demo", experiment_preset = "small", experiment_precision = "float32";
  std::int64_t experiment_steps = 0, figure4_steps = 0, test_sentences = -1;
  bool no_figure4 = false;
  experiment->add_option("--corpus", experiment_options.corpus,
                         "Folder with train, dev and test .en/.de (scripts/build_corpus)");
  experiment->add_option("--out", experiment_options.out,
                         "Where the runs, CSV files, figures and report.md go");
  experiment
      ->add_option("--budget", budget_name,
                   "tiny (seconds, with --preset tiny), demo (about 12 minutes on 2 cores), "
                   "long or paper (the paper's steps, with --preset paper)")
      ->check(CLI::IsMember({"tiny", "demo", "long", "paper"}));
  experiment
      ->add_option(
          "--preset", experiment_preset,
          "Model and training preset of every run: small (the default), tiny, cpu or paper")
      ->check(CLI::IsMember({"tiny", "cpu", "small", "paper"}));
  examples::precision_flag(experiment->add_option("--precision", experiment_precision));
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
    if (train->parsed())
      return train_command.run(train_command.settings(gru_nmt::preset(train_command.preset())),
                               device, gru_nmt::train, threads);
    if (experiment->parsed()) {
      experiment_options.settings = gru_nmt::preset(experiment_preset);
      experiment_options.settings.model.precision = experiment_precision;
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
    const auto sources = ng::text::read_text_lines(score_source);
    const auto targets = ng::text::read_text_lines(score_target);
    nmt::write_scores(std::cout, gru_nmt::score_pairs(*loaded.model, loaded.tokenizer, sources,
                                                      targets, 32, device));
    return 0;
  } catch (const std::exception& error) {
    std::cerr << "gru_nmt: " << error.what() << "\n";
    return examples::end_job(1);
  }
}
