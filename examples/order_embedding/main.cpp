// order_embedding: the RMSNorm paper's image-caption retrieval experiment (its Tables 7 and 8),
// order embeddings with the normaliser inside the caption GRU.
//
//   order_embedding prepare --corpus out/corpus/debian-en-de --out out/oe-data
//   order_embedding train --data out/oe-data --out out/oe/rmsnorm --norm rmsnorm
//   order_embedding train --out out/oe/rmsnorm          # continues where that run stopped
//   order_embedding evaluate --model out/oe/rmsnorm     # test retrieval, averaged over folds
//   order_embedding experiment --data out/oe-data --budget demo   # Table 7 in shape
//   order_embedding time --out out/oe-time              # Table 8: s per 100 steps, every norm
//
// --data takes a folder in the original code's layout (COCO's, with its VGG features), or the
// folder `prepare` makes from a parallel corpus (English captions, German "images").
#include <normgrad/normgrad.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <filesystem>
#include <string>

#include "common/command_flags.h"
#include "common/device_flag.h"
#include "common/experiment_data.h"
#include "common/number_checks.h"
#include "common/program_error.h"
#include "common/wait_policy.h"
#include "experiment.h"
#include "model_folder.h"
#include "proxy_data.h"
#include "run.h"
#include "timing.h"
#include "training.h"

namespace ng = normgrad;
namespace fs = std::filesystem;
using namespace order_embedding;

namespace {

constexpr const char* kProgram = "order_embedding";

using CommonOptions = examples::DeviceFlags;

struct TrainOptions {
  std::string out = "out/order_embedding/rmsnorm";
  std::string data, features;
  std::string norm = "rmsnorm";
  std::int64_t word_dim = 300, dim = 1024;
  std::int64_t steps = 30000, batch = 128, valid_every = 300;
  std::int64_t train_images = 0, dev_images = 1000;
  double lr = 1e-3, clip = 2.0, margin = 0.05;
  std::uint64_t seed = 1;
  bool no_progress = false;
};

struct EvaluateOptions {
  std::string model, data, split = "test";
  std::int64_t fold = 1000, images = 0;
};

bool progress_bar(bool no_progress) { return !no_progress && ::isatty(2) == 1; }

RunConfig run_from(const TrainOptions& o) {
  RunConfig run;
  run.model = {
      .norm = o.norm, .word_dim = o.word_dim, .dim = o.dim, .seed = o.seed, .margin = o.margin};
  run.data = {.folder = o.data.empty() ? o.data : fs::absolute(o.data).lexically_normal().string(),
              .features = o.features,
              .train_images = o.train_images,
              .dev_images = o.dev_images};
  run.training = {.steps = o.steps,
                  .batch_size = o.batch,
                  .learning_rate = o.lr,
                  .clip = o.clip,
                  .valid_every = o.valid_every,
                  .seed = o.seed};
  parse_model_norm(run.model.norm);
  return run;
}

// The flags that say what run a folder holds: given for a folder with a run, they must agree.
const examples::FlagSettings run_flags{{"--norm", "/model/norm"_json_pointer},
                                       {"--word-dim", "/model/word_dim"_json_pointer},
                                       {"--dim", "/model/dim"_json_pointer},
                                       {"--seed", "/model/seed"_json_pointer},
                                       {"--data", "/data/folder"_json_pointer},
                                       {"--features", "/data/features"_json_pointer},
                                       {"--train-images", "/data/train_images"_json_pointer},
                                       {"--dev-images", "/data/dev_images"_json_pointer},
                                       {"--steps", "/training/steps"_json_pointer},
                                       {"--batch", "/training/batch_size"_json_pointer},
                                       {"--lr", "/training/learning_rate"_json_pointer},
                                       {"--clip", "/training/clip"_json_pointer},
                                       {"--margin", "/training/margin"_json_pointer},
                                       {"--valid-every", "/training/valid_every"_json_pointer}};

int prepare(const ProxySettings& settings) {
  std::fprintf(stderr, "order_embedding: building a retrieval data set from '%s'\n",
               settings.corpus.c_str());
  const ProxySummary summary = build_proxy_data(settings);
  std::printf(
      "%lld segments, %lld kept (%lld to %lld English words, no repeats): %lld train, %lld dev, "
      "%lld test pairs in %s\n",
      static_cast<long long>(summary.segments), static_cast<long long>(summary.kept),
      static_cast<long long>(settings.min_words), static_cast<long long>(settings.max_words),
      static_cast<long long>(summary.train), static_cast<long long>(summary.dev),
      static_cast<long long>(summary.test), settings.out.c_str());
  return 0;
}

int train(const TrainOptions& o, const CommonOptions& common, const CLI::App& command) {
  const ng::Device device = examples::parse_device(common.device, kProgram);
  const ModelFolder folder(o.out);
  NG_CHECK(folder.has_config() || !o.data.empty(), kProgram, "--data is needed to start a run in '",
           o.out, "'");
  const RunConfig run = examples::run_to_train(
      folder, run_from(o), run_flags, [&](const char* flag) { return command.count(flag) > 0; });
  if (common.threads > 0) ng::set_num_threads(common.threads);
  train_in_folder(folder, run, device, progress_bar(o.no_progress), stdout);
  return 0;
}

int evaluate(const EvaluateOptions& o, const CommonOptions& common) {
  const ng::Device device = examples::parse_device(common.device, kProgram);
  const ModelFolder folder(o.model);
  const RunConfig run = folder.read_config();
  const std::string weights = folder.weights("train it to its first validation");
  const Vocabulary vocabulary = Vocabulary::load(folder.file("vocabulary.txt"));
  const RetrievalSplit split =
      load_split(o.data.empty() ? run.data.folder : o.data, o.split, run.data.features, o.images);
  if (common.threads > 0) ng::set_num_threads(common.threads);
  OrderEmbeddingModel model(run.model);
  ng::io::load(model, weights);
  model.to(device);
  const std::int64_t folds = std::max<std::int64_t>(1, split.image_count() / o.fold);
  const ng::data::RetrievalScores scores =
      evaluate_retrieval(model, vocabulary, split, device, std::min(o.fold, split.image_count()));
  std::printf("%s, %s split, %lld fold%s of %lld images (%lld captions each):\n  %s\n",
              o.model.c_str(), o.split.c_str(), static_cast<long long>(folds),
              folds == 1 ? "" : "s", static_cast<long long>(std::min(o.fold, split.image_count())),
              static_cast<long long>(split.captions_per_image), scores_text(scores).c_str());
  return 0;
}

struct ExperimentOptions : examples::ExperimentFlags, examples::ExperimentDataFlags {
  std::string features;
};

const examples::ExperimentData local_task{.name = "the retrieval task",
                                          .data_help = "a retrieval data set",
                                          .corpus_help = "{train,dev,test}.{en,de}",
                                          .built_file = "dataset.json"};

int experiment(const ExperimentOptions& o, const CommonOptions& common) {
  const ng::Device device = examples::parse_device(common.device, kProgram);
  const Budget budget = budget_named(o.budget);
  for (const std::string& norm : o.norms) parse_model_norm(norm);
  const auto build = [&](const std::string& corpus, const std::string& folder) {
    ProxySettings task = budget.local_task;
    task.corpus = corpus;
    task.out = folder;
    build_proxy_data(task);
  };
  const std::string data = examples::experiment_data_folder(o, o.out, local_task, build, kProgram);
  ExperimentSettings settings{.norms = o.norms,
                              .out = o.out,
                              .budget = budget.name,
                              .test_images = budget.test_images,
                              .fold_images = budget.fold_images,
                              .timing = budget.timing};
  settings.base.model = {.word_dim = budget.word_dim, .dim = budget.dim, .seed = o.seed};
  settings.base.data = {.folder = fs::absolute(data).lexically_normal().string(),
                        .features = o.features,
                        .train_images = budget.train_images,
                        .dev_images = budget.dev_images};
  settings.base.training = {.steps = o.steps > 0 ? o.steps : budget.steps,
                            .batch_size = budget.batch_size,
                            .learning_rate = kPaperTraining.learning_rate,
                            .clip = kPaperTraining.clip,
                            .valid_every = budget.valid_every,
                            .seed = o.seed};
  if (common.threads > 0) ng::set_num_threads(common.threads);
  run_experiment(settings, device, progress_bar(o.no_progress));
  return 0;
}

int run_timing(const TimingSettings& settings, const std::string& out,
               const CommonOptions& common) {
  const ng::Device device = examples::parse_device(common.device, kProgram);
  if (common.threads > 0) ng::set_num_threads(common.threads);
  std::fprintf(stderr,
               "order_embedding: timing %zu norms at batch %lld, words %lld, GRU %lld, images "
               "%lld on %s: %lld rounds of %lld steps each\n",
               settings.norms.size(), static_cast<long long>(settings.batch),
               static_cast<long long>(settings.word_dim), static_cast<long long>(settings.dim),
               static_cast<long long>(settings.image_dim), device.str().c_str(),
               static_cast<long long>(settings.rounds.rounds),
               static_cast<long long>(settings.rounds.steps));
  const std::vector<examples::NormTiming> timings = time_norms(settings, device, stderr);
  const std::string table = examples::timing_markdown(timings, paper_table8());
  std::printf("%s", table.c_str());
  if (!out.empty()) examples::write_timing_tables(out, "table8", timings, table, kProgram);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  examples::default_to_passive_waiting(argv);
  CLI::App app{
      "Order embeddings for image-caption retrieval with LayerNorm, RMSNorm, pRMSNorm or no "
      "norm in the caption GRU: the RMSNorm paper's Tables 7 and 8"};
  app.require_subcommand(1);
  CommonOptions common;
  const auto add_common = [&](CLI::App* command) { examples::add_device_flags(command, common); };

  ProxySettings p;
  CLI::App* prepare_command =
      app.add_subcommand("prepare",
                         "a retrieval data set of the task's shape from a parallel corpus: English "
                         "captions, German segments as fixed 4096-d feature vectors");
  prepare_command->add_option("--corpus", p.corpus, "a folder with {train,dev,test}.{en,de}")
      ->required();
  prepare_command->add_option("--out", p.out, "the data set's folder")->required();
  prepare_command->add_option("--feature-dim", p.feature_dim, "features per German segment")
      ->check(examples::kPositive)
      ->capture_default_str();
  prepare_command->add_option("--train-pairs", p.train_pairs, "at most so many training pairs")
      ->check(examples::kPositive)
      ->capture_default_str();
  prepare_command->add_option("--dev-pairs", p.dev_pairs, "dev pairs")
      ->check(examples::kPositive)
      ->capture_default_str();
  prepare_command->add_option("--test-pairs", p.test_pairs, "test pairs (folds of 1000)")
      ->check(examples::kPositive)
      ->capture_default_str();
  prepare_command->add_option("--min-words", p.min_words, "the fewest English words a pair has")
      ->check(examples::kPositive)
      ->capture_default_str();
  prepare_command->add_option("--max-words", p.max_words, "the most English words a pair has")
      ->check(examples::kPositive)
      ->capture_default_str();

  TrainOptions t;
  CLI::App* train_command = app.add_subcommand("train", "train a model, or continue its run");
  train_command->add_option("--out", t.out, "the model folder (a run in it is continued)")
      ->capture_default_str();
  train_command->add_option("--data", t.data, "the data set's folder (needed to start a run)");
  train_command->add_option("--features", t.features,
                            "its feature set under images/ (default: the only one)");
  train_command->add_option("--norm", t.norm, "none, layernorm, rmsnorm, prmsnorm:0.0625, l2norm")
      ->capture_default_str();
  train_command->add_option("--word-dim", t.word_dim, "word embedding size")
      ->check(examples::kPositive)
      ->capture_default_str();
  train_command->add_option("--dim", t.dim, "the GRU's and the embedding space's size")
      ->check(examples::kPositive)
      ->capture_default_str();
  train_command->add_option("--steps", t.steps, "training steps")
      ->check(examples::kPositive)
      ->capture_default_str();
  train_command->add_option("--batch", t.batch, "images (each with a caption) per batch")
      ->check(examples::kPositive)
      ->capture_default_str();
  train_command->add_option("--valid-every", t.valid_every, "steps between validations")
      ->check(examples::kPositive)
      ->capture_default_str();
  train_command->add_option("--train-images", t.train_images, "the first so many (0: all)")
      ->check(examples::kNonNegative);
  train_command->add_option("--dev-images", t.dev_images, "the first so many dev images")
      ->check(examples::kPositive)
      ->capture_default_str();
  train_command->add_option("--lr", t.lr, "Adam's learning rate")
      ->check(examples::kPositive)
      ->capture_default_str();
  train_command->add_option("--clip", t.clip, "each gradient's largest norm (0: no clipping)")
      ->check(examples::kNonNegative)
      ->capture_default_str();
  train_command->add_option("--margin", t.margin, "the contrastive loss's margin")
      ->check(examples::kNonNegative)
      ->capture_default_str();
  train_command->add_option("--seed", t.seed, "initial weights and batches")->capture_default_str();
  train_command->add_flag("--no-progress", t.no_progress, "no progress line on a terminal");
  add_common(train_command);

  EvaluateOptions e;
  CLI::App* evaluate_command = app.add_subcommand(
      "evaluate", "retrieval with a model folder's best weights, both ways, averaged over folds");
  evaluate_command->add_option("--model", e.model, "the model folder")->required();
  evaluate_command->add_option("--data", e.data, "the data set's folder, if not the trained one's");
  evaluate_command->add_option("--split", e.split, "train, dev or test")
      ->check(CLI::IsMember({"train", "dev", "test"}))
      ->capture_default_str();
  evaluate_command->add_option("--fold", e.fold, "images per fold (the paper: 1000)")
      ->check(examples::kPositive)
      ->capture_default_str();
  evaluate_command->add_option("--images", e.images, "the first so many images (0: all)")
      ->check(examples::kNonNegative);
  add_common(evaluate_command);

  ExperimentOptions x;
  x.out = "out/order_embedding";
  x.norms = paper_norms();
  CLI::App* experiment_command = app.add_subcommand(
      "experiment", "the paper's Table 7 in shape: every norm trained the same way, a report");
  examples::add_experiment_data_flags(experiment_command, x, local_task);
  experiment_command->add_option("--features", x.features, "its feature set under images/");
  examples::add_experiment_flags(
      experiment_command, x, {"tiny", "demo", "long", "paper"},
      "tiny (seconds, to check the pipeline), demo (GRU 256, 600 steps), long (GRU "
      "512, 3000 steps) or paper (the paper's sizes, 30000 steps)");
  add_common(experiment_command);

  TimingSettings m;
  std::string time_out;
  CLI::App* time_command = app.add_subcommand(
      "time",
      "the paper's Table 8 in shape: seconds per 100 training steps of every norm at the "
      "paper's sizes, on inputs of the real data's shapes");
  examples::add_rounds_flags(time_command, m.norms, m.rounds);
  time_command->add_option("--batch", m.batch, "captions and images per step")
      ->check(examples::kPositive)
      ->capture_default_str();
  time_command->add_option("--word-dim", m.word_dim, "word embedding size")
      ->check(examples::kPositive)
      ->capture_default_str();
  time_command->add_option("--dim", m.dim, "the GRU's size")
      ->check(examples::kPositive)
      ->capture_default_str();
  time_command->add_option("--image-dim", m.image_dim, "image features")
      ->check(examples::kPositive)
      ->capture_default_str();
  time_command->add_option("--vocabulary", m.vocabulary, "words (the embedding's rows)")
      ->check(examples::kPositive)
      ->capture_default_str();
  time_command->add_option("--out", time_out, "a folder for table8.csv and table8.md");
  add_common(time_command);

  CLI11_PARSE(app, argc, argv);
  try {
    if (*prepare_command) return prepare(p);
    if (*train_command) return train(t, common, *train_command);
    if (*experiment_command) return experiment(x, common);
    if (*time_command) {
      for (const std::string& norm : m.norms) parse_model_norm(norm);
      return run_timing(m, time_out, common);
    }
    return evaluate(e, common);
  } catch (const ng::Error& error) {
    return examples::print_program_error(kProgram, error);
  }
}
