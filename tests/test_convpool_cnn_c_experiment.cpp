// `convpool_cnn_c experiment` (examples/convpool_cnn_c/experiment.h) at a tiny size: every run
// trained from the same seed, the table, curves and report written, finished runs taken as they
// are, and a folder holding another run refused.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/gnuplot.h"
#include "convpool_cnn_c/experiment.h"
#include "helpers.h"
#include "scratch_folder.h"

using namespace normgrad;

namespace {

std::string read(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

convpool_cnn_c::ExperimentSettings tiny(const std::string& out) {
  convpool_cnn_c::ExperimentSettings settings{
      .norms = {"layernorm", "rmsnorm"}, .out = out, .budget = "test"};
  settings.base.data = {.train_size = 80, .test_size = 20};
  settings.base.model = {.input_channels = 1, .width = 0.05, .seed = 4};
  settings.base.training = {.epochs = 2, .batch_size = 20, .init_images = 40, .seed = 4};
  return settings;
}

}  // namespace

TEST_CASE("convpool_cnn_c experiment: every run, the table, the curves and the report") {
  testing::ScratchFolder scratch("convpool_experiment");
  const auto settings = tiny(scratch.path.string());
  const auto runs = convpool_cnn_c::run_experiment(settings, Device::cpu(), false);
  REQUIRE(runs.size() == 2);
  for (const auto& run : runs) CHECK(run.history.size() == 2);
  CHECK(std::filesystem::exists(scratch / "layernorm/model.safetensors"));
  CHECK(std::filesystem::exists(scratch / "rmsnorm/state.safetensors"));
  // LayerNorm's own speed-up is 0; RMSNorm's is (T_LN - T) / T_LN of the medians.
  CHECK(*convpool_cnn_c::speedup_over_layernorm(runs, runs[0]) == 0);
  const double t_ln = convpool_cnn_c::median_epoch_seconds(runs[0]);
  const double t_rms = convpool_cnn_c::median_epoch_seconds(runs[1]);
  CHECK(*convpool_cnn_c::speedup_over_layernorm(runs, runs[1]) ==
        doctest::Approx(100 * (t_ln - t_rms) / t_ln));

  const std::string table = read(scratch / "table10.csv");
  CHECK(table.rfind("norm,epochs,test_error,test_images,", 0) == 0);
  CHECK(table.find("\nlayernorm,2,") != std::string::npos);
  CHECK(table.find(",20,") != std::string::npos);  // the 20 test images each error counts
  CHECK(table.find("\nrmsnorm,2,") != std::string::npos);
  const std::string curves = read(scratch / "curves.csv");
  CHECK(std::count(curves.begin(), curves.end(), '\n') == 5);  // a header and 2 x 2 epochs
  const std::string report = read(scratch / "report.md");
  CHECK(report.find("| rmsnorm | ") != std::string::npos);
  CHECK(report.find("8.83%") != std::string::npos);  // the paper's RMSNorm beside ours
  CHECK(report.find("80 training and 20 test images") != std::string::npos);
  if (examples::find_gnuplot_terminal()) {  // the figure was drawn and goes into the report
    CHECK(report.find("![training error](training_error.") != std::string::npos);
  } else {
    MESSAGE("gnuplot not found: the drawing itself is not tested");
  }

  // Again: the finished runs are taken as they are, with the same records.
  const auto again = convpool_cnn_c::run_experiment(settings, Device::cpu(), false);
  CHECK(again[1].history[1].test_error == runs[1].history[1].test_error);
  CHECK(again[1].history[1].seconds == runs[1].history[1].seconds);

  // Another width is another run: refused before anything trains.
  auto other = settings;
  other.base.model.width = 0.1;
  CHECK_ERROR(convpool_cnn_c::run_experiment(other, Device::cpu(), false), "holds another run");
  CHECK_ERROR(convpool_cnn_c::budget_named("huge"), "tiny, demo, long, gpu or paper");
  CHECK(convpool_cnn_c::budget_named("paper").epochs == 200);  // the paper's whole schedule
  const auto gpu = convpool_cnn_c::budget_named("gpu");
  CHECK(gpu.width == 1.0);     // the paper's channel counts
  CHECK(gpu.train_size == 0);  // every image
  CHECK(convpool_cnn_c::budget_named("demo").width < convpool_cnn_c::budget_named("long").width);
  CHECK(convpool_cnn_c::run_folder_name("prmsnorm:0.125,eps=1e-8") == "prmsnorm-0.125-eps-1e-8");
}
