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
#include <iostream>
#include <string>
#include <vector>

#include "common/command_flags.h"
#include "common/distributed_run.h"
#include "common/wait_policy.h"
#include "text/text_file.h"
#include "experiment.h"
#include "model_folder.h"
#include "nmt/command_line.h"
#include "nmt/train_command.h"
#include "report.h"
#include "trainer.h"
#include "translation.h"

namespace {

namespace ng = normgrad;
using transformer_nmt::Settings;

// Runs the experiment and writes its CSV files, figures and report.md into options.out.
void run_experiment_command(const transformer_nmt::ExperimentOptions& options) {
  const std::string settings =
      transformer_nmt::describe(transformer_nmt::shared_run_settings(options));
  std::cerr << settings;
  const auto results = transformer_nmt::run_experiment(options);
  transformer_nmt::write_experiment_csv(options.out, results);
  const auto figures = nmt::draw_figures(options.out, [&](const std::string& terminal) {
    return transformer_nmt::figures_script(results, terminal);
  });
  if (!figures.message.empty()) std::cerr << figures.message << "\n";
  const nmt::ReportContext context{.date = nmt::today(),
                                   .machine = nmt::machine_description(options.device),
                                   .corpus = options.corpus,
                                   .settings = settings,
                                   .figures = figures.files};
  nmt::publish_report(options.out, transformer_nmt::report_markdown(results, context),
                      transformer_nmt::experiment_program);
}

}  // namespace

int main(int argc, char** argv) {
  examples::default_to_passive_waiting(argv);
  CLI::App app{
      "transformer_nmt: the Transformer encoder-decoder (Vaswani et al. 2017) with any "
      "normaliser"};
  app.require_subcommand(1);
  app.fallthrough();  // --device and --threads may follow the subcommand
  std::string device_name = "cpu";
  int threads = 0;
  app.add_option("--device", device_name, "cpu or cuda")->check(CLI::IsMember({"cpu", "cuda"}));
  app.add_option("--threads", threads, "CPU threads (default: all cores)")
      ->check(CLI::PositiveNumber);

  // ---- train
  auto* train = app.add_subcommand("train", "Train a model into a model folder (or --resume one)");
  nmt::TrainCommand<Settings> train_command(train, "transformer_nmt",
                                            {"tiny", "cpu", "small", "base"});
  auto& flags = train_command.flags();
  flags.add("--norm", NMT_SETTING(model.norm),
            "none, layernorm, rmsnorm, prmsnorm:p or l2norm (every norm slot)");
  std::string placement = "post";
  auto* placement_option =
      train->add_option("--placement", placement, "post (x = Norm(x + F(x)), the paper's) or pre")
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
  auto* untied_option = train->add_flag(
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
  auto* translate =
      app.add_subcommand("translate", "Translate stdin to stdout with a trained model folder");
  std::string translate_folder, weights;
  std::int64_t beam = 4, n_best = 1, translate_batch = 32;
  bool greedy = false, uncached = false;
  translate->add_option("--model", translate_folder, "A model folder written by train")->required();
  translate->add_option("--beam", beam, "Beam width")->check(CLI::Range(1, 1000));
  translate->add_option("--n-best", n_best, "Translations per sentence, as Moses's n-best lines")
      ->check(CLI::Range(1, 1000));
  translate->add_flag("--greedy", greedy, "Greedy search (a beam of 1)");
  translate->add_option("--batch", translate_batch, "Sentences per batch")
      ->check(CLI::PositiveNumber);
  translate->add_flag("--uncached", uncached,
                      "Recompute the whole prefix at every step (the cache's slow twin)");
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
  for (auto* command : {translate, score})
    command->add_option("--weights", weights,
                        "Weights to use: a file in the folder (averaged.safetensors) or a path "
                        "(default: best.safetensors, else model.safetensors)");

  // ---- experiment
  auto* experiment = app.add_subcommand(
      "experiment", "The paper's Table 4: every norm trained, tested and compared, with a report");
  transformer_nmt::ExperimentOptions experiment_options;
  experiment_options.corpus = "out/corpus/debian-en-de";
  experiment_options.out = "out/transformer_nmt";
  std::string budget_name = "demo", experiment_preset = "small", experiment_precision = "float32";
  std::int64_t experiment_steps = 0, test_sentences = -1;
  bool no_pre_norm = false;
  experiment->add_option("--corpus", experiment_options.corpus,
                         "Folder with train, dev and test .en/.de (scripts/build_corpus)");
  experiment->add_option("--out", experiment_options.out,
                         "Where the runs, CSV files, figures and report.md go");
  experiment
      ->add_option("--budget", budget_name,
                   "tiny (seconds, with --preset tiny), demo (about 8 minutes on 2 cores), "
                   "long or paper (the paper's steps, with --preset base)")
      ->check(CLI::IsMember({"tiny", "demo", "long", "paper"}));
  experiment
      ->add_option("--preset", experiment_preset,
                   "Model and training preset of every run: small (the default), tiny, cpu or base")
      ->check(CLI::IsMember({"tiny", "cpu", "small", "base"}));
  examples::precision_flag(experiment->add_option("--precision", experiment_precision));
  experiment->add_option("--steps", experiment_steps, "Steps of each run (replaces the budget's)")
      ->check(CLI::PositiveNumber);
  experiment->add_option("--test-sentences", test_sentences, "Test lines to translate (0: all)")
      ->check(CLI::NonNegativeNumber);
  experiment
      ->add_option("--norms", experiment_options.norms,
                   "The norms of Table 4 (post-norm), comma-separated")
      ->delimiter(',');
  experiment
      ->add_option("--pre-norms", experiment_options.pre_norms,
                   "The norms also trained pre-norm, comma-separated")
      ->delimiter(',');
  experiment->add_flag("--no-pre-norm", no_pre_norm, "Leave out the pre-norm runs");
  experiment->add_option("--beam", experiment_options.beam, "Beam for test BLEU")
      ->check(CLI::Range(1, 1000));

  CLI11_PARSE(app, argc, argv);
  try {
    const ng::Device device = nmt::parse_device(device_name, "transformer_nmt");
    if (threads > 0) ng::set_num_threads(threads);
    if (train->parsed()) {
      Settings settings = train_command.settings(transformer_nmt::preset(train_command.preset()));
      if (placement_option->count() > 0) settings.model.pre_norm = placement == "pre";
      if (untied_option->count() > 0) settings.model.tie_embeddings = !untied;
      return train_command.run(settings, device, transformer_nmt::train, threads);
    }
    if (experiment->parsed()) {
      experiment_options.settings = transformer_nmt::preset(experiment_preset);
      experiment_options.settings.model.precision = experiment_precision;
      experiment_options.budget = transformer_nmt::experiment_budget(budget_name);
      if (experiment_steps > 0) experiment_options.budget.steps = experiment_steps;
      if (test_sentences >= 0) experiment_options.budget.test_sentences = test_sentences;
      if (no_pre_norm) experiment_options.pre_norms.clear();
      experiment_options.device = device;
      experiment_options.messages = &std::cerr;
      transformer_nmt::check_experiment(experiment_options);
      run_experiment_command(experiment_options);
      return 0;
    }
    if (average->parsed()) {
      const transformer_nmt::ModelFolder model_folder(average_folder);
      const auto averaged =
          transformer_nmt::average_checkpoints(model_folder, last, average_output);
      std::cerr << "averaged the training states of steps";
      for (const auto step : averaged) std::cerr << " " << step;
      std::cerr << " into " << model_folder.file(average_output) << "\n";
      return 0;
    }
    ng::Generator generator(0);
    const bool translating = translate->parsed();
    const transformer_nmt::ModelFolder model_folder(translating ? translate_folder : score_folder);
    auto loaded = transformer_nmt::load_model_folder(model_folder, generator, weights);
    if (!device.is_cpu()) loaded.model->to(device);
    auto& model = *loaded.model;
    if (translating) {
      const std::int64_t width = greedy ? 1 : beam;
      NG_CHECK(n_best <= width, "transformer_nmt translate", "--n-best ", n_best,
               " is more than the beam ", width);
      std::vector<std::vector<std::int32_t>> sources;
      for (const auto& line : nmt::read_stdin_lines())
        sources.push_back(loaded.tokenizer.encode(line));
      const auto options = transformer_nmt::search_options(width, n_best);
      const nmt::BatchTranslator translator = [&](const nmt::SourceBatch& source) {
        return transformer_nmt::translate_batch(model, source, options, !uncached);
      };
      nmt::write_translations(
          std::cout,
          nmt::translate_n_best(translator, loaded.tokenizer, sources, translate_batch, device),
          n_best);
      return 0;
    }
    const nmt::TeacherForcedLogProbs log_probs = [&](const nmt::SourceBatch& source,
                                                     const nmt::TargetBatch& target) {
      const ng::Tensor memory = model.encode(source.ids, source.padding);
      const ng::Tensor logits = model.forward(memory, source.padding, target.input);
      return ng::log_softmax(logits.to(model.config().dtype), -1);  // float32 in mixed precision
    };
    nmt::write_scores(std::cout, nmt::score_pairs(log_probs, loaded.tokenizer,
                                                  ng::text::read_text_lines(score_source),
                                                  ng::text::read_text_lines(score_target), 32,
                                                  device, "transformer_nmt score"));
    return 0;
  } catch (const std::exception& error) {
    std::cerr << "transformer_nmt: " << error.what() << "\n";
    return examples::end_job(1);
  }
}
