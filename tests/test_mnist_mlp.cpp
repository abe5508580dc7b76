// examples/mnist_mlp: the 784-1000-1000-10 model for each normaliser (its layers, parameter
// count and initial weights), a short training run on a slice of Fashion-MNIST for each,
// the CSV files, the results table and the gnuplot script.

#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <thread>

#include "common/cpu_share.h"
#include "common/gnuplot.h"
#include "common/record_csv.h"
#include "common/text_file.h"
#include "helpers.h"
#include "mnist_mlp/model.h"
#include "mnist_mlp/plot.h"
#include "mnist_mlp/report.h"
#include "mnist_mlp/training.h"

using namespace normgrad;
namespace fs = std::filesystem;

namespace {

struct Folder {
  fs::path path = fs::temp_directory_path() / ("normgrad-mnist-" + std::to_string(::getpid()));
  Folder() { fs::create_directories(path); }
  ~Folder() { fs::remove_all(path); }
  std::string file(const std::string& name) const { return (path / name).string(); }
};

// Runs a test on one thread and restores the setting after. The matrices of these tests gain
// little from a second thread, and when other work shares the cores, threads waiting on each
// other would make the time of a test unpredictable.
struct OneThread {
  int threads = get_num_threads();
  OneThread() { set_num_threads(1); }
  ~OneThread() { set_num_threads(threads); }
  OneThread(const OneThread&) = delete;
  OneThread& operator=(const OneThread&) = delete;
};

std::vector<std::string> lines_of(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

std::vector<std::string> layer_types(nn::Sequential& model) {
  std::vector<std::string> types;
  for (std::size_t i = 0; i < model.size(); ++i) types.push_back(model[i].type_name());
  return types;
}

// Two hand-made runs, for the writers: one spec needs quoting in a CSV.
std::vector<mnist_mlp::RunResult> two_runs() {
  mnist_mlp::RunResult layernorm{.norm = "layernorm",
                                 .batch_size = 128,
                                 .steps = 20,
                                 .parameters = 1798010,
                                 .train_seconds = 0.2,
                                 .ms_per_step = 10.0,
                                 .test_accuracy = 0.5};
  layernorm.curve = {{.step = 10, .wall_seconds = 0.1, .train_loss = 2.0},
                     {.step = 20, .wall_seconds = 0.2, .train_loss = 1.5, .test_accuracy = 0.5}};
  mnist_mlp::RunResult partial{.norm = "prmsnorm:0.125,eps=1e-8",
                               .batch_size = 128,
                               .steps = 10,
                               .parameters = 1798010,
                               .train_seconds = 0.08,
                               .ms_per_step = 8.0,
                               .test_accuracy = 0.625};
  layernorm.other_processes_cpu = 0.25;
  partial.curve = {{.step = 10, .wall_seconds = 0.08, .train_loss = 1.25, .test_accuracy = 0.625}};
  return {layernorm, partial};
}

}  // namespace

TEST_CASE("mnist_mlp: the 784-1000-1000-10 model has the paper's layers for each normaliser") {
  // Weights 784*1000 + 1000*1000 + 1000*10, the logits' 10 biases, and per hidden layer
  // either the Linear's 1000 biases or the normaliser's 1000 gains and 1000 biases.
  const OneThread one_thread;
  constexpr std::int64_t kWeights = 784 * 1000 + 1000 * 1000 + 1000 * 10 + 10;
  const struct {
    const char* spec;
    std::vector<std::string> layers;
    std::int64_t parameters;
  } cases[] = {
      {"none",
       {"Linear", "Identity", "ReLU", "Linear", "Identity", "ReLU", "Linear"},
       kWeights + 2 * 1000},
      {"batchnorm",
       {"Linear", "BatchNorm1d", "ReLU", "Linear", "BatchNorm1d", "ReLU", "Linear"},
       kWeights + 2 * 2000},
      {"layernorm",
       {"Linear", "LayerNorm", "ReLU", "Linear", "LayerNorm", "ReLU", "Linear"},
       kWeights + 2 * 2000},
      {"rmsnorm",
       {"Linear", "RMSNorm", "ReLU", "Linear", "RMSNorm", "ReLU", "Linear"},
       kWeights + 2 * 2000},
      {"prmsnorm",
       {"Linear", "pRMSNorm", "ReLU", "Linear", "pRMSNorm", "ReLU", "Linear"},
       kWeights + 2 * 2000},
      {"rmsnorm,bias=off",
       {"Linear", "RMSNorm", "ReLU", "Linear", "RMSNorm", "ReLU", "Linear"},
       kWeights + 2 * 1000},  // gains only: the RMSNorm code's form
      {"weightnorm",
       {"WeightNormLinear", "ReLU", "WeightNormLinear", "ReLU", "Linear"},
       kWeights + 2 * 2000},  // g and a bias per unit
  };
  Generator generator(5);
  const Tensor images = rand({3, 784}, generator);
  for (const auto& expected : cases) {
    const std::string spec = expected.spec;
    CAPTURE(spec);
    const auto model = mnist_mlp::make_model(mnist_mlp::parse_model_norm(expected.spec));
    CHECK(layer_types(*model) == expected.layers);
    CHECK(mnist_mlp::count_parameters(*model) == expected.parameters);
    const Tensor logits = model->forward(images);
    CHECK(logits.shape() == Shape{3, 10});
    CHECK(std::isfinite(logits.sum().item()));
  }
  // A Linear in front of a normaliser has no bias of its own; without one it keeps it.
  const auto none = mnist_mlp::make_model(mnist_mlp::parse_model_norm("none"), {}, 7);
  const auto rms = mnist_mlp::make_model(mnist_mlp::parse_model_norm("rmsnorm"), {}, 7);
  auto& none_first = dynamic_cast<nn::Linear&>((*none)[0]);
  auto& rms_first = dynamic_cast<nn::Linear&>((*rms)[0]);
  CHECK(none_first.bias.defined());
  CHECK_FALSE(rms_first.bias.defined());
  // The same seed gives every normaliser the same weight matrices; another seed, others.
  CHECK(testing::all_close(rms_first.weight, none_first.weight, 0, 0));
  CHECK(testing::all_close(dynamic_cast<nn::Linear&>((*rms)[6]).weight,
                           dynamic_cast<nn::Linear&>((*none)[6]).weight, 0, 0));
  const auto other = mnist_mlp::make_model(mnist_mlp::parse_model_norm("rmsnorm"), {}, 8);
  CHECK_FALSE(
      testing::all_close(dynamic_cast<nn::Linear&>((*other)[0]).weight, rms_first.weight, 0, 0));
  // PyTorch's bound, 1/sqrt(784), for the first layer's weights.
  CHECK(rms_first.weight.abs().max().item() <= 1.0 / 28.0);
  CHECK(rms_first.weight.abs().max().item() > 0.9 / 28.0);
}

TEST_CASE("mnist_mlp: a bad normaliser spec or setting is an error that says what is wrong") {
  CHECK_ERROR(mnist_mlp::parse_model_norm("rmsnrom"), "NormSpec", "unknown normaliser 'rmsnrom'",
              "valid specs");
  CHECK_ERROR(mnist_mlp::parse_model_norm("prmsnorm:2"), "NormSpec");
  CHECK_ERROR(mnist_mlp::make_model(mnist_mlp::parse_model_norm("none"), {.hidden = {}}),
              "make_model", "at least one hidden layer");
  Generator generator(1);
  const data::ImageDataset tiny{rand({8, 784}, generator), zeros({8}, {.dtype = DType::Int64})};
  CHECK_ERROR(mnist_mlp::train_run({.norm = "layernrom"}, tiny, tiny), "NormSpec", "layernrom");
  CHECK_ERROR(mnist_mlp::train_run({.batch_size = 16, .steps = 1}, tiny, tiny), "train_run",
              "batch size 16", "8 training images");
  CHECK_ERROR(mnist_mlp::train_run({.batch_size = 4, .steps = 0}, tiny, tiny), "train_run",
              "must be positive");
  CHECK_ERROR(mnist_mlp::steps_for_epochs(1, 100, 128), "steps_for_epochs");
}

TEST_CASE("mnist_mlp: steps for a number of epochs drop the last partial batch") {
  CHECK(mnist_mlp::steps_for_epochs(1, 55000, 128) == 429);
  CHECK(mnist_mlp::steps_for_epochs(1, 55000, 4) == 13750);
  CHECK(mnist_mlp::steps_for_epochs(2, 1000, 32) == 62);
  CHECK(mnist_mlp::steps_for_epochs(0.5, 1000, 100) == 5);
  CHECK(mnist_mlp::steps_for_epochs(0.01, 1000, 100) == 1);  // at least one step
}

TEST_CASE("mnist_mlp: a few hundred Adam steps on Fashion-MNIST lower the loss for each norm") {
  if (!fs::exists(data::fashion_mnist_folder())) {
    MESSAGE(
        "skipped: "
        << data::fashion_mnist_folder()
        << " is missing (apt-get install dataset-fashion-mnist, or set NORMGRAD_FASHION_MNIST)");
    return;
  }
  const OneThread one_thread;
  const auto train_all = data::load_mnist(data::fashion_mnist_folder(), data::Split::Train);
  const auto test_all = data::load_mnist(data::fashion_mnist_folder(), data::Split::Test);
  // A slice of each split and a narrower model keep this to a second or two.
  const data::ImageDataset train{train_all.images.narrow(0, 0, 2000),
                                 train_all.labels.narrow(0, 0, 2000)};
  const data::ImageDataset test{test_all.images.narrow(0, 0, 1000),
                                test_all.labels.narrow(0, 0, 1000)};
  const struct {
    const char* norm;
    std::int64_t batch_size;
  } runs[] = {{"none", 32},    {"batchnorm", 32}, {"layernorm", 32},
              {"rmsnorm", 32}, {"prmsnorm", 32},  {"layernorm", 4}};
  for (const auto& run : runs) {
    const std::string norm = run.norm;
    CAPTURE(norm);
    CAPTURE(run.batch_size);
    mnist_mlp::RunSettings settings{.norm = run.norm,
                                    .batch_size = run.batch_size,
                                    .steps = 300,
                                    .seed = 3,
                                    .eval_every = 100,
                                    .log_every = 10};
    settings.shape.hidden = {128, 128};
    const auto result = mnist_mlp::train_run(settings, train, test);
    // A point every 10 steps, with the test accuracy at steps 100, 200 and 300 only.
    REQUIRE(result.curve.size() == 30);
    for (std::size_t i = 0; i < result.curve.size(); ++i) {
      const auto& point = result.curve[i];
      CHECK(point.step == static_cast<std::int64_t>(10 * (i + 1)));
      CHECK(point.test_accuracy.has_value() == (point.step % 100 == 0));
      if (i > 0) CHECK(point.wall_seconds >= result.curve[i - 1].wall_seconds);
    }
    // From about ln 10 = 2.3 over the first ten steps to well below half of it.
    const double first = result.curve.front().train_loss;
    const double last =
        (result.curve[27].train_loss + result.curve[28].train_loss + result.curve[29].train_loss) /
        3;
    CHECK(first > 1.2);
    CHECK(last < 0.5 * first);
    CHECK(result.test_accuracy > 0.65);  // chance is 0.1
    CHECK(result.test_accuracy == *result.curve.back().test_accuracy);
    CHECK(result.ms_per_step == doctest::Approx(1000 * result.train_seconds / 300));
    // Per hidden unit a Linear bias ("none") or a gain and a bias (the normalisers).
    const std::int64_t per_unit = norm == "none" ? 1 : 2;
    CHECK(result.parameters == 784 * 128 + 128 * 128 + 128 * 10 + 10 + per_unit * 256);
  }
}

TEST_CASE("mnist_mlp: the same seed gives the same run, step for step") {
  Generator generator(2);
  const data::ImageDataset data{rand({64, 784}, generator), randint(0, 10, {64}, generator)};
  mnist_mlp::RunSettings settings{
      .norm = "batchnorm", .batch_size = 8, .steps = 20, .seed = 11, .log_every = 1};
  settings.shape.hidden = {32, 32};
  const auto a = mnist_mlp::train_run(settings, data, data);
  const auto b = mnist_mlp::train_run(settings, data, data);
  settings.seed = 12;
  const auto c = mnist_mlp::train_run(settings, data, data);
  REQUIRE(a.curve.size() == 20);
  REQUIRE(b.curve.size() == 20);
  bool differs = false;
  for (std::size_t i = 0; i < a.curve.size(); ++i) {
    CHECK(a.curve[i].train_loss == b.curve[i].train_loss);
    differs = differs || a.curve[i].train_loss != c.curve[i].train_loss;
  }
  CHECK(differs);
  CHECK(a.test_accuracy == b.test_accuracy);
}

// On a GPU the run follows the CPU's loss curve (float32 sums in another order: close, not
// bitwise); without one, asking for it is an error that names the device.
TEST_CASE("mnist_mlp: a run on a CUDA device matches the CPU run, or says there is no device") {
  Generator generator(3);
  const data::ImageDataset data{rand({32, 784}, generator), randint(0, 10, {32}, generator)};
  mnist_mlp::RunSettings settings{.norm = "rmsnorm", .batch_size = 8, .steps = 5, .log_every = 1};
  settings.shape.hidden = {16, 16};
  const auto on_cpu = mnist_mlp::train_run(settings, data, data);
  settings.device = Device::cuda();
  if (!cuda::is_available()) {
    CHECK_ERROR(mnist_mlp::train_run(settings, data, data), "cuda");
    return;
  }
  const auto on_gpu = mnist_mlp::train_run(settings, data, data);
  REQUIRE(on_gpu.curve.size() == on_cpu.curve.size());
  for (std::size_t i = 0; i < on_cpu.curve.size(); ++i)
    CHECK(on_gpu.curve[i].train_loss == doctest::Approx(on_cpu.curve[i].train_loss).epsilon(1e-4));
}

TEST_CASE("mnist_mlp: the CSV files hold every curve point and run, quoted where needed") {
  Folder folder;
  const auto runs = two_runs();
  examples::write_text_file(folder.file("curves.csv"), mnist_mlp::curves_csv(runs), "mnist_mlp");
  CHECK(lines_of(folder.file("curves.csv")) ==
        std::vector<std::string>{
            "run,norm,batch_size,step,wall_seconds,train_loss,test_accuracy",
            "0,layernorm,128,10,0.1000,2,",
            "0,layernorm,128,20,0.2000,1.5,0.5000",
            "1,\"prmsnorm:0.125,eps=1e-8\",128,10,0.0800,1.25,0.6250",
        });
  examples::write_text_file(folder.file("summary.csv"), mnist_mlp::summary_csv(runs), "mnist_mlp");
  CHECK(lines_of(folder.file("summary.csv")) ==
        std::vector<std::string>{
            "run,norm,batch_size,steps,parameters,train_seconds,ms_per_step,test_accuracy,"
            "other_processes_cpu",
            "0,layernorm,128,20,1798010,0.200,10.000,0.5000,0.250",
            "1,\"prmsnorm:0.125,eps=1e-8\",128,10,1798010,0.080,8.000,0.6250,",
        });
  CHECK(examples::csv_field("say \"hi\"") == "\"say \"\"hi\"\"\"");
  // A file where its folder should be: the error says so, naming the path.
  CHECK_ERROR(examples::write_text_file(folder.file("curves.csv/curves.csv"),
                                        mnist_mlp::curves_csv(runs), "mnist_mlp"),
              "mnist_mlp", "cannot create", "curves.csv");
}

TEST_CASE("mnist_mlp: the table gives accuracy, ms per step and the time saved against LayerNorm") {
  auto runs = two_runs();
  runs.push_back({.norm = "rmsnorm",
                  .batch_size = 4,
                  .steps = 10,
                  .parameters = 1798010,
                  .ms_per_step = 3.0,
                  .test_accuracy = 0.25});
  const std::string table = mnist_mlp::results_table(runs);
  CHECK(table.find("| layernorm | 128 | 20 | 1798010 | 50.00% | 10.00 | +0.0% | 25% |") !=
        std::string::npos);
  // (10 - 8) / 10: pRMSNorm took 20% less time per step than LayerNorm.
  CHECK(
      table.find("| prmsnorm:0.125,eps=1e-8 | 128 | 10 | 1798010 | 62.50% | 8.00 | +20.0% | – |") !=
      std::string::npos);
  // No LayerNorm run at batch size 4 to compare with.
  CHECK(table.find("| rmsnorm | 4 | 10 | 1798010 | 25.00% | 3.00 | – | – |") != std::string::npos);
}

TEST_CASE("mnist_mlp: the gnuplot script draws each batch size's runs, and gnuplot runs it") {
  auto runs = two_runs();
  runs.push_back(runs[0]);
  runs.back().batch_size = 4;
  const mnist_mlp::PlotSettings settings{.terminal = "svg", .title = "test"};
  CHECK(mnist_mlp::plot_files(runs, settings) ==
        std::vector<std::string>{"loss_b128.svg", "loss_b4.svg"});
  const std::string script = mnist_mlp::plot_script(runs, settings);
  CHECK(script.find("set terminal svg") != std::string::npos);
  CHECK(script.find("set output \"loss_b128.svg\"") != std::string::npos);
  CHECK(script.find("set output \"loss_b4.svg\"") != std::string::npos);
  // Run 1 (batch 128) is drawn from its rows, under its spec, in all three panels; run 2
  // only in the batch-4 image.
  CHECK(script.find("using ($1 == 1 ? $4 : NaN):($1 == 1 ? $6 : NaN)") != std::string::npos);
  CHECK(script.find("using ($1 == 1 ? $5 : NaN):($1 == 1 ? $6 : NaN)") != std::string::npos);
  CHECK(script.find("using ($1 == 1 && valid(7) ? $4 : NaN):($1 == 1 && valid(7) ? $7 : NaN)") !=
        std::string::npos);
  CHECK(script.find("title \"prmsnorm:0.125,eps=1e-8\"") != std::string::npos);
  const std::size_t batch4 = script.find("loss_b4.svg");
  CHECK(script.find("$1 == 2 ?") > batch4);
  CHECK(script.find("$1 == 1 ?", batch4) == std::string::npos);

  const auto terminal = examples::find_gnuplot_terminal();
  if (!terminal) {
    MESSAGE("gnuplot not found: the drawing itself is not tested");
    return;
  }
  Folder folder;
  examples::write_text_file(folder.file("curves.csv"), mnist_mlp::curves_csv(runs), "mnist_mlp");
  const auto outcome = mnist_mlp::draw_plots(folder.path.string(), runs, "test");
  INFO(outcome.message);
  REQUIRE(outcome.files.size() == 2);
  for (const std::string& file : outcome.files) {
    CAPTURE(file);
    CHECK(fs::file_size(folder.path / file) > 1000);
  }
  CHECK(fs::exists(folder.file("curves.gp")));
}

TEST_CASE("mnist_mlp: other processes' CPU share leaves this process's own time out") {
  // 2 cores for 10 s = 20 core-seconds, of which the machine was busy for 13 and this
  // process used 8: the others took 5, a quarter.
  const examples::CpuSample start{
      .busy_seconds = 100, .own_seconds = 2, .wall_seconds = 50, .valid = true};
  const examples::CpuSample end{
      .busy_seconds = 113, .own_seconds = 10, .wall_seconds = 60, .valid = true};
  CHECK(examples::other_processes_share(start, end, 2).value() == doctest::Approx(0.25));
  CHECK(examples::other_processes_share(start, end, 4).value() == doctest::Approx(0.125));
  // Tick rounding can make busy time fall short of this process's own: clamped to 0.
  const examples::CpuSample short_end{
      .busy_seconds = 107, .own_seconds = 10, .wall_seconds = 60, .valid = true};
  CHECK(examples::other_processes_share(start, short_end, 2).value() == 0);
  // No interval, no reading, no cores: unknown.
  CHECK_FALSE(examples::other_processes_share(start, start, 2).has_value());
  CHECK_FALSE(examples::other_processes_share(start, examples::CpuSample{}, 2).has_value());
  CHECK_FALSE(examples::other_processes_share(start, end, 0).has_value());

  // On Linux the meter reads /proc/stat and gives a share in [0, 1].
  const examples::OtherProcessesMeter meter;
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  const auto share = meter.fraction();
  REQUIRE(share.has_value());
  CHECK(*share >= 0);
  CHECK(*share <= 1);
}
