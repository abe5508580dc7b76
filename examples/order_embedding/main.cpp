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

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <string>

#include "common/command_flags.h"
#include "common/number_checks.h"
#include "common/program_error.h"
#include "common/validated_commands.h"
#include "common/wait_policy.h"
#include "experiment.h"
#include "model_folder.h"
#include "proxy_data.h"
#include "run.h"
#include "timing.h"
#include "training.h"

namespace ng = normgrad;
using namespace order_embedding;

namespace {

constexpr const char* kProgram = "order_embedding";

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

struct EvaluateOptions {
  std::string model, data, split = "test";
  std::int64_t fold = 1000, images = 0;
  examples::DeviceFlags device;
};

int evaluate(const EvaluateOptions& o) {
  const ng::Device device = examples::use_device(o.device, kProgram);
  const ModelFolder folder(o.model);
  const RunConfig run = folder.read_config();
  const auto model = examples::load_trained_model<OrderEmbeddingModel>(folder, device);
  const Vocabulary vocabulary = Vocabulary::load(folder.file("vocabulary.txt"));
  const RetrievalSplit split =
      load_split(o.data.empty() ? run.data.folder : o.data, o.split, run.data.features, o.images);
  const std::int64_t folds = std::max<std::int64_t>(1, split.image_count() / o.fold);
  const ng::data::RetrievalScores scores =
      evaluate_retrieval(*model, vocabulary, split, device, std::min(o.fold, split.image_count()));
  std::printf("%s, %s split, %lld fold%s of %lld images (%lld captions each):\n  %s\n",
              o.model.c_str(), o.split.c_str(), static_cast<long long>(folds),
              folds == 1 ? "" : "s", static_cast<long long>(std::min(o.fold, split.image_count())),
              static_cast<long long>(split.captions_per_image), scores_text(scores).c_str());
  return 0;
}

const examples::ExperimentData local_task{.name = "the retrieval task",
                                          .data_help = "a retrieval data set",
                                          .corpus_help = "{train,dev,test}.{en,de}",
                                          .built_file = "dataset.json"};

int experiment(const examples::ExperimentCommand& command, const std::string& features) {
  Budget budget = budget_named(command.flags.budget);
  const auto build = [&](const std::string& corpus, const std::string& folder) {
    ProxySettings task = budget.local_task;
    task.corpus = corpus;
    task.out = folder;
    build_proxy_data(task);
  };
  const ng::Device device = command.start(budget.run, 0, parse_model_norm, build, kProgram);
  budget.run.data.features = features;
  run_experiment({.norms = command.flags.norms, .out = command.flags.out, .budget = budget}, device,
                 command.progress_bar());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  examples::default_to_passive_waiting(argv);
  CLI::App app{
      "Order embeddings for image-caption retrieval with LayerNorm, RMSNorm, pRMSNorm or no "
      "norm in the caption GRU: the RMSNorm paper's Tables 7 and 8"};
  app.require_subcommand(1);

  ProxySettings p;
  CLI::App* prepare_command =
      app.add_subcommand("prepare",
                         "a retrieval data set of the task's shape from a parallel corpus: English "
                         "captions, German segments as fixed 4096-d feature vectors");
  prepare_command->add_option("--corpus", p.corpus, "a folder with {train,dev,test}.{en,de}")
      ->required();
  prepare_command->add_option("--out", p.out, "the data set's folder")->required();
  examples::add_positive(prepare_command, "--feature-dim", p.feature_dim,
                         "features per German segment");
  examples::add_positive(prepare_command, "--train-pairs", p.train_pairs,
                         "at most so many training pairs");
  examples::add_positive(prepare_command, "--dev-pairs", p.dev_pairs, "dev pairs");
  examples::add_positive(prepare_command, "--test-pairs", p.test_pairs,
                         "test pairs (folds of 1000)");
  examples::add_positive(prepare_command, "--min-words", p.min_words,
                         "the fewest English words a pair has");
  examples::add_positive(prepare_command, "--max-words", p.max_words,
                         "the most English words a pair has");

  examples::TrainCommand<RunConfig> train(app, kProgram, {.training = kPaperTraining},
                                          "out/order_embedding/rmsnorm",
                                          "the data set's folder (needed to start a run)");
  RunConfig& t = train.run;
  train.add("--features", t.data.features, "/data/features",
            "its feature set under images/ (default: the only one)");
  train.add("--norm", t.model.norm, "/model/norm",
            "none, layernorm, rmsnorm, prmsnorm:0.0625, l2norm");
  train.add("--word-dim", t.model.word_dim, "/model/word_dim", "word embedding size")
      ->check(examples::kPositive);
  train.add("--dim", t.model.dim, "/model/dim", "the GRU's and the embedding space's size")
      ->check(examples::kPositive);
  train
      .add("--train-images", t.data.train_images, "/data/train_images",
           "the first so many (0: all)")
      ->check(examples::kNonNegative);
  train.add("--dev-images", t.data.dev_images, "/data/dev_images", "the first so many dev images")
      ->check(examples::kPositive);
  train.add("--margin", t.model.margin, "/training/margin", "the contrastive loss's margin")
      ->check(examples::kNonNegative);
  train.add_training_flags({.batch = "images (each with a caption) per batch",
                            .clip = "each gradient's largest norm (0: no clipping)",
                            .seed = "initial weights and batches"});

  EvaluateOptions e;
  CLI::App* evaluate_command = app.add_subcommand(
      "evaluate", "retrieval with a model folder's best weights, both ways, averaged over folds");
  evaluate_command->add_option("--model", e.model, "the model folder")->required();
  evaluate_command->add_option("--data", e.data, "the data set's folder, if not the trained one's");
  evaluate_command->add_option("--split", e.split, "train, dev or test")
      ->check(CLI::IsMember({"train", "dev", "test"}))
      ->capture_default_str();
  examples::add_positive(evaluate_command, "--fold", e.fold, "images per fold (the paper: 1000)");
  evaluate_command->add_option("--images", e.images, "the first so many images (0: all)")
      ->check(examples::kNonNegative);
  examples::add_device_flags(evaluate_command, e.device);

  examples::ExperimentCommand experiment_command(
      app, "the paper's Table 7 in shape: every norm trained the same way, a report", local_task,
      examples::budget_names(budgets()),
      "tiny (seconds, to check the pipeline), demo (GRU 256, 600 steps), long (GRU 512, 3000 "
      "steps) or paper (the paper's sizes, 30000 steps)",
      "out/order_embedding", paper_norms());
  std::string features;
  experiment_command.command->add_option("--features", features, "its feature set under images/");

  examples::TimeCommand<TimingSettings> time(
      app,
      "the paper's Table 8 in shape: seconds per 100 training steps of every norm at the "
      "paper's sizes, on inputs of the real data's shapes",
      "table8");
  TimingSettings& m = time.settings;
  examples::add_positive(time.command, "--batch", m.batch, "captions and images per step");
  examples::add_positive(time.command, "--word-dim", m.word_dim, "word embedding size");
  examples::add_positive(time.command, "--dim", m.dim, "the GRU's size");
  examples::add_positive(time.command, "--image-dim", m.image_dim, "image features");
  examples::add_positive(time.command, "--vocabulary", m.vocabulary,
                         "words (the embedding's rows)");

  CLI11_PARSE(app, argc, argv);
  try {
    if (*prepare_command) return prepare(p);
    if (*train.command) return train.train<ModelFolder>(parse_model_norm, train_in_folder);
    if (*experiment_command.command) return experiment(experiment_command, features);
    if (*time.command) return time.time(kProgram, parse_model_norm, time_norms, paper_table8());
    return evaluate(e);
  } catch (const ng::Error& error) {
    return examples::print_program_error(kProgram, error);
  }
}
