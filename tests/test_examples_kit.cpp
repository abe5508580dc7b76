// The examples' kit (examples/common/): a program's training state, refused when it is not
// this run's, and the norm sweep's folders, checked before any run trains.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "common/norm_sweep.h"
#include "common/run_folder.h"
#include "common/training_state.h"
#include "helpers.h"
#include "scratch_folder.h"

using namespace normgrad;
using testing::ScratchFolder;

namespace {

// A model, its optimizer and its generator, made alike from a seed.
struct SmallRun {
  Generator generator{5};
  nn::Linear model{3, 2};
  optim::Adam adam{model.parameters(), optim::AdamOptions{.lr = 0.01}};
};

}  // namespace

TEST_CASE("examples' training state: the run continues exactly, another run's state is refused") {
  ScratchFolder folder("examples_training_state");
  std::filesystem::create_directories(folder.path);
  const std::string path = folder / "state.safetensors";
  const examples::StateOwner owner{"kit_test", "linear 3 2"};
  manual_seed(3);
  SmallRun saved;
  saved.generator.reserve(9);  // draws the run has taken
  examples::save_training_state(path, owner, saved.model, saved.adam, saved.generator, 7,
                                "step\n7\n");

  manual_seed(4);  // other weights, overwritten by the load
  SmallRun loaded;
  const examples::LoadedTrainingState state =
      examples::load_training_state(path, owner, loaded.model, loaded.adam, loaded.generator);
  CHECK(state.steps == 7);
  CHECK(state.history_csv == "step\n7\n");
  CHECK(loaded.generator.offset() == 9);
  const auto before = saved.model.parameters(), after = loaded.model.parameters();
  for (std::size_t i = 0; i < before.size(); ++i)
    CHECK(testing::all_close(after[i], before[i], 0, 0));

  CHECK_ERROR(examples::load_training_state(path, {"other_program", "linear 3 2"}, loaded.model,
                                            loaded.adam, loaded.generator),
              "is not a other_program training state");
  CHECK_ERROR(examples::load_training_state(path, {"kit_test", "linear 3 4"}, loaded.model,
                                            loaded.adam, loaded.generator),
              "holds the model linear 3 2, not this one: linear 3 4");

  // A damaged file is refused, not half loaded.
  const auto size = std::filesystem::file_size(path);
  std::filesystem::resize_file(path, size - 3);
  CHECK_THROWS_AS(
      examples::load_training_state(path, owner, loaded.model, loaded.adam, loaded.generator),
      Error);

  CHECK_ERROR(examples::check_steps_done(path, "kit_test", 5, 7, 10), "up to step 5", "7 steps");
  CHECK_ERROR(examples::check_steps_done(path, "kit_test", 7, 7, 6), "more than --steps 6");
  examples::check_steps_done(path, "kit_test", 7, 7, 7);
}

TEST_CASE("examples' norm sweep: a folder per run, every folder checked before the first trains") {
  ScratchFolder out("examples_norm_sweep");
  std::vector<std::string> checked, ran;
  examples::NormSweep sweep{.program = "kit_test",
                            .out = out.path.string(),
                            .norms = {"layernorm", "prmsnorm:0.0625"},
                            .variant = ", pre-norm",
                            .check = [&](const examples::SweepRun& run) {
                              CHECK(ran.empty());
                              checked.push_back(run.folder);
                            }};
  sweep.announce = [](const examples::SweepRun&) {};
  const std::vector<std::string> labels =
      examples::run_norm_sweep(sweep, [&](const examples::SweepRun& run) {
        ran.push_back(run.folder);
        CHECK(run.count == 2);
        return run.label;
      });
  CHECK(labels == std::vector<std::string>{"layernorm, pre-norm", "prmsnorm:0.0625, pre-norm"});
  CHECK(checked == ran);
  CHECK(ran.back() == out / "prmsnorm-0.0625-pre-norm");

  sweep.norms.clear();
  CHECK_ERROR(examples::plan_norm_sweep(sweep), "at least one norm");

  // A folder's run must be the one asked for, but for what a run finds when it starts.
  const examples::RunFolder folder(out / "layernorm", "kit_test");
  const nlohmann::json stored{{"model", {{"norm", "layernorm"}, {"vocabulary", 40}}}};
  nlohmann::json asked{{"model", {{"norm", "layernorm"}, {"vocabulary", 0}}}};
  examples::check_sweep_folder(folder, stored, asked, {"/model/vocabulary"_json_pointer});
  CHECK_ERROR(examples::check_sweep_folder(folder, stored, asked), "holds another run");
}
