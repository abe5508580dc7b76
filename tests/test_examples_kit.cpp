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
  manual_seed(3);
  SmallRun saved;
  saved.generator.reserve(9);  // draws the run has taken
  examples::save_run_state(path, {saved.model, saved.adam, saved.generator, "kit_test", "linear"},
                           7, "step\n7\n");

  manual_seed(4);  // other weights, overwritten by the load
  SmallRun loaded;
  const auto state_of = [&](const std::string& program, const std::string& description) {
    return examples::RunState{loaded.model, loaded.adam, loaded.generator, program, description};
  };
  const examples::LoadedRunState state =
      examples::load_run_state(path, state_of("kit_test", "linear"));
  CHECK(state.steps == 7);
  CHECK(state.history == "step\n7\n");
  CHECK(loaded.generator.offset() == 9);
  const auto before = saved.model.parameters(), after = loaded.model.parameters();
  for (std::size_t i = 0; i < before.size(); ++i)
    CHECK(testing::all_close(after[i], before[i], 0, 0));

  CHECK_ERROR(examples::load_run_state(path, state_of("other_program", "linear")),
              "is not a training state of other_program");
  CHECK_ERROR(examples::load_run_state(path, state_of("kit_test", "conv")),
              "holds the model linear, not this one: conv");

  // A damaged file is refused, not half loaded.
  std::filesystem::resize_file(path, std::filesystem::file_size(path) - 3);
  CHECK_THROWS_AS(examples::load_run_state(path, state_of("kit_test", "linear")), Error);
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
