// The LayerNorm paper's permutation-invariant MNIST experiment (Ba, Kiros and Hinton 2016), run on
// Fashion-MNIST: a 784-1000-1000-10 MLP trained with Adam at batch sizes 128 and 4, its
// hidden layers normalised by each normaliser in turn. Prints the final test accuracy and the
// time per training step of every run, writes the curves as CSV and draws them as the
// RMSNorm paper's Figure 1 does: training loss against steps and against wall-clock time.
#include <normgrad/normgrad.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "common/command_flags.h"
#include "common/cpu_share.h"
#include "common/device_flag.h"
#include "common/number_checks.h"
#include "common/number_text.h"
#include "common/program_error.h"
#include "common/progress.h"
#include "common/step_profile.h"
#include "common/text_file.h"
#include "common/wait_policy.h"
#include "model.h"
#include "plot.h"
#include "report.h"
#include "training.h"

namespace ng = normgrad;
namespace fs = std::filesystem;

namespace {

struct Options {
  std::string data = ng::data::fashion_mnist_folder();
  std::vector<std::string> norms{"none", "batchnorm", "layernorm", "rmsnorm", "prmsnorm"};
  std::vector<std::int64_t> batch_sizes{128, 4};
  std::optional<std::int64_t> steps;
  double epochs = 1;
  double lr = 1e-3;
  std::uint64_t seed = 1;
  std::string out = "out/mnist_mlp";
  examples::DeviceFlags device;
  std::optional<std::int64_t> eval_every;
  std::int64_t log_every = 0;
  std::int64_t train_size = 55000;
  bool no_plot = false;
  examples::ProfileFlags profile;  // the first run's steps
};

// The first `count` training images: the LayerNorm paper trains on 55000 of MNIST's 60000
// (the other 5000 are its validation split).
ng::data::ImageDataset first(const ng::data::ImageDataset& dataset, std::int64_t count) {
  return {dataset.images.narrow(0, 0, count), dataset.labels.narrow(0, 0, count)};
}

int run(const Options& options) {
  const ng::Device device = examples::parse_device(options.device.device, "mnist_mlp");
  // Every spec is checked before anything slow happens.
  for (const std::string& norm : options.norms) mnist_mlp::parse_model_norm(norm);
  NG_CHECK(fs::is_directory(options.data), "mnist_mlp", "--data '", options.data,
           "' is not a folder; give a folder with MNIST-format files "
           "(train-images-idx3-ubyte.gz, ...), or install Debian's dataset-fashion-mnist for the "
           "default ",
           ng::data::kFashionMnistFolder);
  if (options.device.threads > 0) ng::set_num_threads(options.device.threads);

  const auto all_train = ng::data::load_mnist(options.data, ng::data::Split::Train);
  const auto test = ng::data::load_mnist(options.data, ng::data::Split::Test);
  NG_CHECK(options.train_size <= all_train.images.size(0), "mnist_mlp", "--train-size ",
           options.train_size, " is more than the ", all_train.images.size(0),
           " training images in ", options.data);
  const auto train = first(all_train, options.train_size);
  for (const std::int64_t batch_size : options.batch_sizes)
    NG_CHECK(batch_size <= options.train_size, "mnist_mlp", "batch size ", batch_size,
             " is more than the ", options.train_size, " training images");
  char setup[1024];
  std::snprintf(setup, sizeof setup,
                "%s: %lld training images (of %lld), %lld test images; Adam, lr %g; seed %llu; "
                "threads: %d (OMP_WAIT_POLICY=%s); device: %s",
                options.data.c_str(), static_cast<long long>(train.images.size(0)),
                static_cast<long long>(all_train.images.size(0)),
                static_cast<long long>(test.images.size(0)), options.lr,
                static_cast<unsigned long long>(options.seed), ng::get_num_threads(),
                std::getenv("OMP_WAIT_POLICY") ? std::getenv("OMP_WAIT_POLICY") : "unset",
                device.str().c_str());
  std::printf("%s\n\n", setup);
  std::fflush(stdout);  // before the progress lines on stderr, when both go to one file

  fs::create_directories(options.out);  // an --out that cannot be a folder fails before training
  const std::string curves = (fs::path(options.out) / "curves.csv").string();
  const std::string summary = (fs::path(options.out) / "summary.csv").string();
  const bool bar = examples::stderr_is_terminal();
  std::vector<mnist_mlp::RunResult> results;
  for (const std::int64_t batch_size : options.batch_sizes) {
    mnist_mlp::RunSettings settings{.batch_size = batch_size,
                                    .lr = options.lr,
                                    .seed = options.seed,
                                    .log_every = options.log_every,
                                    .device = device};
    settings.shape.inputs = train.images.size(1);
    settings.steps = options.steps ? *options.steps
                                   : mnist_mlp::steps_for_epochs(options.epochs,
                                                                 train.images.size(0), batch_size);
    // Five evaluations per run unless told otherwise; 0 means after the last step only.
    settings.eval_every =
        options.eval_every ? *options.eval_every : std::max<std::int64_t>(1, settings.steps / 5);
    for (const std::string& norm : options.norms) {
      settings.norm = norm;
      const std::string label = norm + " b=" + std::to_string(batch_size);
      const std::int64_t per_epoch = train.images.size(0) / batch_size;
      examples::ProgressLine progress(
          {.out = &std::cerr,
           .redraw = bar,
           .label = label,
           .total_steps = settings.steps,
           .steps_per_epoch = per_epoch,
           .epochs = settings.steps % per_epoch == 0 ? settings.steps / per_epoch : 0});
      const examples::OtherProcessesMeter others;
      results.push_back(mnist_mlp::train_run(
          settings, train, test,
          [&progress](std::int64_t step, double loss) { progress.update(step, loss); },
          results.empty() ? options.profile : examples::ProfileFlags{}));
      results.back().other_processes_cpu = others.fraction();
      const mnist_mlp::RunResult& result = results.back();
      progress.note(label + ": " + std::to_string(result.steps) + " steps in " +
                    examples::format_number("%.1f s", result.train_seconds) + " (" +
                    examples::format_number("%.2f ms/step", result.ms_per_step) +
                    "), test accuracy " +
                    examples::format_number("%.2f%%\n", 100.0 * result.test_accuracy));
      // Rewritten after every run, so that an interrupted session keeps the runs it finished.
      examples::write_text_file(curves, mnist_mlp::curves_csv(results), "mnist_mlp");
      examples::write_text_file(summary, mnist_mlp::summary_csv(results), "mnist_mlp");
    }
  }

  std::printf("\n%s\n", mnist_mlp::results_table(results).c_str());
  std::printf("curves: %s\nsummary: %s\n", curves.c_str(), summary.c_str());
  std::vector<std::string> images;
  if (!options.no_plot) {
    fs::path data_folder(options.data);
    if (data_folder.filename().empty()) data_folder = data_folder.parent_path();  // "dir/"
    const std::string title = "784-1000-1000-10 MLP on " + data_folder.filename().string() +
                              ", Adam lr " + examples::format_number("%g", options.lr);
    const auto plots = mnist_mlp::draw_plots(options.out, results, title);
    for (const std::string& file : plots.files)
      std::printf("plot: %s\n", (fs::path(options.out) / file).c_str());
    images = plots.files;
    if (!plots.message.empty())
      std::fprintf(stderr, "mnist_mlp: %s%s\n",
                   plots.files.empty() ? "" : "gnuplot: ", plots.message.c_str());
  }
  const std::string report = (fs::path(options.out) / "report.md").string();
  examples::write_text_file(report, mnist_mlp::report_markdown(results, setup, images),
                            "mnist_mlp");
  std::printf("report: %s\n", report.c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  examples::default_to_passive_waiting(argv);  // idle threads sleep (common/wait_policy.h)
  CLI::App app{
      "The LayerNorm paper's permutation-invariant MNIST experiment on Fashion-MNIST: a "
      "784-1000-1000-10 MLP with each normaliser on its hidden layers, at each batch size"};
  Options options;
  app.add_option("--data", options.data, "folder of MNIST-format IDX files")->capture_default_str();
  app.add_option("--norms", options.norms,
                 "normaliser specs, space-separated: none batchnorm layernorm rmsnorm "
                 "prmsnorm[:p] l2norm weightnorm, with options such as \"rmsnorm,eps=1e-8\"")
      ->capture_default_str();
  app.add_option("--batch-sizes", options.batch_sizes, "batch sizes, e.g. 128,4")
      ->delimiter(',')
      ->check(examples::kPositive)
      ->capture_default_str();
  auto* steps = app.add_option("--steps", options.steps, "Adam steps per run (instead of --epochs)")
                    ->check(examples::kPositive);
  app.add_option("--epochs", options.epochs, "passes over the training images per run")
      ->check(examples::kPositive)
      ->excludes(steps)
      ->capture_default_str();
  app.add_option("--lr", options.lr, "Adam's learning rate")
      ->check(examples::kPositive)
      ->capture_default_str();
  app.add_option("--seed", options.seed, "seed of the initial weights and the batch order")
      ->capture_default_str();
  app.add_option("--out", options.out, "folder for curves.csv, summary.csv and the plots")
      ->capture_default_str();
  examples::add_device_flags(&app, options.device);
  app.add_option("--eval-every", options.eval_every,
                 "steps between test evaluations (default: a fifth of a run; 0: at the end only)")
      ->check(examples::kNonNegative);
  app.add_option("--log-every", options.log_every,
                 "steps per curve point, the loss averaged over them (default 0: ~100 points)")
      ->check(examples::kNonNegative);
  app.add_option("--train-size", options.train_size,
                 "training images used, the first ones of the training set")
      ->check(examples::kPositive)
      ->capture_default_str();
  app.add_flag("--no-plot", options.no_plot, "write the CSV files but draw no plots");
  examples::add_profile_flags(&app, options.profile);  // of the first run
  CLI11_PARSE(app, argc, argv);

  try {
    return run(options);
  } catch (const std::exception& error) {  // an Error, or a filesystem's: an --out that is a file
    return examples::print_program_error("mnist_mlp", error);
  }
}
