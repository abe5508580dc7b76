// convpool_cnn_c: the RMSNorm paper's CIFAR-10 experiment (its Table 10), ConvPool-CNN-C with
// any normaliser, trained as the WeightNorm paper's code trains it.
//
//   convpool_cnn_c train --out out/cnn/rmsnorm --norm rmsnorm --width 0.25 --epochs 10
//   convpool_cnn_c train --out out/cnn/rmsnorm          # continues where that run stopped
//   convpool_cnn_c evaluate --model out/cnn/rmsnorm
//   convpool_cnn_c experiment --budget demo            # Table 10 in shape, every norm
//
// The default data is Fashion-MNIST from Debian; --dataset cifar10 --data DIR trains on
// CIFAR-10's binary version, the paper's own setting.
#include <normgrad/normgrad.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <string>

#include "common/budget.h"
#include "common/command_flags.h"
#include "common/device_flag.h"
#include "common/distributed_run.h"
#include "common/number_checks.h"
#include "common/program_error.h"
#include "common/progress.h"
#include "common/step_profile.h"
#include "common/wait_policy.h"
#include "data.h"
#include "experiment.h"
#include "model.h"
#include "model_folder.h"
#include "run.h"
#include "training.h"

namespace ng = normgrad;
using namespace convpool_cnn_c;

namespace {

// --device and --threads, and how a GPU multiplies the convolutions (core/cuda.h).
struct CommonOptions : examples::DeviceFlags {
  std::string conv = "columns";
};

// The device of --device, with --conv's convolution algorithm set for it.
ng::Device device_of(const CommonOptions& common) {
  const ng::Device device = examples::parse_device(common.device, "convpool_cnn_c");
  NG_CHECK(common.conv == "columns" || device.is_cuda(), "convpool_cnn_c", "--conv ", common.conv,
           " needs a CUDA device (--device cuda)");
  ng::cuda::set_conv_algorithm(common.conv == "implicit" ? ng::cuda::ConvAlgorithm::ImplicitGemm
                                                         : ng::cuda::ConvAlgorithm::Columns);
  return device;
}

// `train`'s flags set the run's settings where they stand; --dataset and --seed set several.
struct TrainOptions {
  RunConfig run;
  std::string out = "out/convpool_cnn_c/rmsnorm";
  std::string dataset = "fashion-mnist";
  bool no_progress = false;
  bool distributed = false;
  examples::ProfileFlags profile;
};

// `experiment`'s flags: the kit's, counting epochs, and the data and precision of every run.
struct ExperimentOptions {
  examples::ExperimentFlags flags{.out = "out/convpool_cnn_c", .norms = paper_norms()};
  std::string dataset = "fashion-mnist";
  std::string data;
  std::string precision = "float32";
};

struct EvaluateOptions {
  std::string model;
  std::string data;
  std::int64_t test_size = 0;
};

// The run that `options` describe, its norm and width checked.
RunConfig run_from(TrainOptions o) {
  o.run.data.kind = parse_dataset(o.dataset);
  o.run.model.input_channels = image_channels(o.run.data.kind);
  o.run.training.seed = o.run.model.seed;
  parse_model_norm(o.run.model.norm);
  scaled_channels(96, o.run.model.width);
  return o.run;
}

// The flags that name a setting of the run a folder holds: given for a folder that holds
// another, they are refused (examples::check_same_run).
const examples::FlagSettings& run_flags() {
  static const examples::FlagSettings flags{
      {"--norm", "/model/norm"_json_pointer},
      {"--width", "/model/width"_json_pointer},
      {"--seed", "/model/seed"_json_pointer},
      {"--precision", "/model/precision"_json_pointer},
      {"--dataset", "/data/dataset"_json_pointer},
      {"--data", "/data/folder"_json_pointer},
      {"--train-size", "/data/train_size"_json_pointer},
      {"--test-size", "/data/test_size"_json_pointer},
      {"--epochs", "/training/epochs"_json_pointer},
      {"--batch", "/training/batch_size"_json_pointer},
      {"--lr", "/training/learning_rate"_json_pointer},
      {"--init-images", "/training/init_images"_json_pointer}};
  return flags;
}

int train(const TrainOptions& o, const CommonOptions& common, const CLI::App& command) {
  const ng::Device device = device_of(common);
  const ModelFolder folder(o.out);
  const RunConfig run = examples::run_to_train(
      folder, run_from(o), run_flags(), [&](const char* flag) { return command.count(flag) > 0; });
  if (common.threads > 0) ng::set_num_threads(common.threads);
  const examples::DistributedRun job =
      examples::join_job(o.distributed, common.threads, "convpool_cnn_c");
  train_in_folder(folder, run, examples::device_for_rank(device, job),
                  !o.no_progress && examples::stderr_is_terminal(), stdout, job.shard(), o.profile);
  return 0;
}

int experiment(const ExperimentOptions& o, const CommonOptions& common) {
  const ng::Device device = device_of(common);
  const Budget budget = budget_named(o.flags.budget);
  ExperimentSettings settings{.norms = o.flags.norms, .out = o.flags.out, .budget = budget.name};
  settings.base.data = {.kind = parse_dataset(o.dataset),
                        .folder = o.data,
                        .train_size = budget.train_size,
                        .test_size = budget.test_size};
  settings.base.model = {.input_channels = image_channels(settings.base.data.kind),
                         .width = budget.width,
                         .seed = o.flags.seed,
                         .precision = o.precision};
  settings.base.training = {.epochs = o.flags.steps > 0 ? o.flags.steps : budget.epochs,
                            .seed = o.flags.seed};
  if (common.threads > 0) ng::set_num_threads(common.threads);
  run_experiment(settings, device, !o.flags.no_progress && examples::stderr_is_terminal());
  return 0;
}

int evaluate(const EvaluateOptions& o, const CommonOptions& common) {
  const ng::Device device = device_of(common);
  const ModelFolder folder(o.model);
  RunConfig run = folder.read_config();
  const auto model =
      examples::load_trained_model<ConvPoolCnnC>(folder, device, "train it for at least one epoch");
  if (!o.data.empty()) run.data.folder = o.data;
  if (o.test_size > 0) run.data.test_size = o.test_size;
  run.data.train_size = 1;  // no training image is needed: the whitening comes from the folder
  if (common.threads > 0) ng::set_num_threads(common.threads);
  const PreparedData data = prepare_data(run.data, load_whitening(folder));
  const double error = classification_error(*model, data.test, device);
  std::printf("test error %.2f%% on %lld %s test images (%s)\n", 100 * error,
              static_cast<long long>(data.test.images.size(0)), dataset_name(run.data.kind).c_str(),
              o.model.c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  examples::default_to_passive_waiting(argv);
  CLI::App app{
      "ConvPool-CNN-C with LayerNorm, RMSNorm, pRMSNorm, BatchNorm, WeightNorm or no norm: "
      "the RMSNorm paper's CIFAR-10 experiment"};
  app.require_subcommand(1);
  CommonOptions common;
  TrainOptions t;
  RunConfig& r = t.run;
  EvaluateOptions e;
  const auto add_common = [&](CLI::App* command) {
    examples::add_device_flags(command, common);
    command
        ->add_option("--conv", common.conv,
                     "how a GPU multiplies the convolutions: columns (im2col and cuBLAS) or "
                     "implicit (implicit-GEMM kernels, no columns in memory)")
        ->check(CLI::IsMember({"columns", "implicit"}))
        ->capture_default_str();
  };

  CLI::App* train_command = app.add_subcommand("train", "train a model, or continue its run");
  train_command->add_option("--out", t.out, "the model folder (a run in it is continued)")
      ->capture_default_str();
  train_command
      ->add_option("--norm", r.model.norm,
                   "none, weightnorm, batchnorm, layernorm, rmsnorm, prmsnorm:0.125, ...")
      ->capture_default_str();
  train_command->add_option("--dataset", t.dataset, "fashion-mnist or cifar10")
      ->check(CLI::IsMember({"fashion-mnist", "cifar10"}))
      ->capture_default_str();
  train_command->add_option("--data", r.data.folder,
                            "the dataset's folder (default: Debian's Fashion-MNIST; CIFAR-10: the "
                            "binary version's cifar-10-batches-bin)");
  train_command->add_option("--width", r.model.width, "scales the channel counts 96 and 192")
      ->check(examples::kPositive)
      ->capture_default_str();
  examples::precision_flag(train_command->add_option("--precision", r.model.precision))
      ->capture_default_str();
  train_command
      ->add_option("--epochs", r.training.epochs, "epochs; the schedule turns at half of them")
      ->check(examples::kPositive)
      ->capture_default_str();
  train_command->add_option("--batch", r.training.batch_size, "images per batch")
      ->check(examples::kPositive)
      ->capture_default_str();
  train_command
      ->add_option("--lr", r.training.learning_rate,
                   "the base learning rate (0: 0.003, or 0.0003 for none)")
      ->check(examples::kNonNegative)
      ->capture_default_str();
  train_command
      ->add_option("--init-images", r.training.init_images,
                   "images for the data-dependent initialisation (none, weightnorm)")
      ->check(examples::kPositive)
      ->capture_default_str();
  train_command
      ->add_option("--train-size", r.data.train_size, "the first so many training images (0: all)")
      ->check(examples::kNonNegative);
  train_command
      ->add_option("--test-size", r.data.test_size, "the first so many test images (0: all)")
      ->check(examples::kNonNegative);
  train_command
      ->add_option("--seed", r.model.seed, "initial weights, noise, dropout and batch order")
      ->capture_default_str();
  train_command->add_flag("--no-progress", t.no_progress, "no progress line on a terminal");
  examples::add_distributed_flag(train_command, t.distributed);
  examples::add_profile_flags(train_command, t.profile);
  add_common(train_command);

  CLI::App* evaluate_command =
      app.add_subcommand("evaluate", "the test error of a model folder's weights");
  evaluate_command->add_option("--model", e.model, "the model folder")->required();
  evaluate_command->add_option("--data", e.data, "the dataset's folder, if not the one trained on");
  evaluate_command
      ->add_option("--test-size", e.test_size,
                   "the first so many test images (default: as in training)")
      ->check(examples::kNonNegative);
  add_common(evaluate_command);

  ExperimentOptions x;
  CLI::App* experiment_command = app.add_subcommand(
      "experiment", "the paper's Table 10 in shape: every norm trained the same way, a report");
  examples::add_experiment_flags(
      experiment_command, x.flags, examples::budget_names(budgets()),
      "tiny (seconds, to check the pipeline), demo (width 0.25, about 8 minutes on 2 cores), long "
      "(width 0.5, about 95), gpu (the paper's width, every image, 10 epochs) or paper (as gpu, "
      "the paper's 200 epochs)",
      "epochs");
  experiment_command->add_option("--dataset", x.dataset, "fashion-mnist or cifar10")
      ->check(CLI::IsMember({"fashion-mnist", "cifar10"}))
      ->capture_default_str();
  experiment_command->add_option("--data", x.data, "the dataset's folder");
  examples::precision_flag(experiment_command->add_option("--precision", x.precision))
      ->capture_default_str();
  add_common(experiment_command);

  CLI11_PARSE(app, argc, argv);
  try {
    if (*train_command) return train(t, common, *train_command);
    if (*experiment_command) return experiment(x, common);
    return evaluate(e, common);
  } catch (const ng::Error& error) {
    return examples::end_job(examples::print_program_error("convpool_cnn_c", error));
  }
}
