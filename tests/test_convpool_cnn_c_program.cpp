// The convpool_cnn_c program as a user runs it: train, continue, evaluate from the folder
// alone, and the refusals before any work. Its model folder's configuration is checked here
// too.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "convpool_cnn_c/model_folder.h"
#include "helpers.h"
#include "profile_checks.h"
#include "run_program.h"
#include "scratch_folder.h"

using namespace normgrad;
using testing::check_refused;
using testing::run_program;
using testing::ScratchFolder;

TEST_CASE("convpool_cnn_c's config.json goes out and back, and damage is named") {
  ScratchFolder scratch("convpool_config");
  const convpool_cnn_c::ModelFolder folder(scratch / "model");
  convpool_cnn_c::RunConfig config;
  config.model.norm = "prmsnorm:0.125";
  config.model.width = 0.25;
  config.data.kind = convpool_cnn_c::DatasetKind::Cifar10;
  config.data.folder = "/data/cifar";
  config.training.epochs = 7;
  config.model.precision = "bfloat16";
  CHECK_FALSE(folder.has_config());
  folder.write_config(config);
  CHECK(folder.has_config());
  const auto back = folder.read_config();
  CHECK(back.model.norm == "prmsnorm:0.125");
  CHECK(back.model.width == 0.25);
  CHECK(back.data.kind == convpool_cnn_c::DatasetKind::Cifar10);
  CHECK(back.data.folder == "/data/cifar");
  CHECK(back.training.epochs == 7);
  CHECK(back.model.precision == "bfloat16");
  CHECK(convpool_cnn_c::to_json(back) == convpool_cnn_c::to_json(config));

  auto json = convpool_cnn_c::to_json(config);
  json["model"].erase("width");
  CHECK_ERROR(convpool_cnn_c::run_config_from_json(json), "config.json has no model.width");
  json = convpool_cnn_c::to_json(config);
  json["training"]["epochs"] = "many";
  CHECK_ERROR(convpool_cnn_c::run_config_from_json(json), "training.epochs", "wrong type");
  json = convpool_cnn_c::to_json(config);
  json["model"]["norm"] = "groupnorm";
  CHECK_ERROR(convpool_cnn_c::run_config_from_json(json), "groupnorm");
  json = convpool_cnn_c::to_json(config);
  json["model"]["precision"] = "float8";
  CHECK_ERROR(convpool_cnn_c::run_config_from_json(json), "precision", "float8");
  // A folder written before the precision was kept trains in float32.
  json["model"].erase("precision");
  CHECK(convpool_cnn_c::run_config_from_json(json).model.precision == "float32");
  std::ofstream(scratch / "model/config.json") << "{ not json";
  CHECK_ERROR(folder.read_config(), "is not JSON");
  CHECK_ERROR(convpool_cnn_c::ModelFolder(scratch / "none").read_config(), "no config.json");
}

#ifdef NORMGRAD_CONVPOOL_CNN_C_PROGRAM

TEST_CASE("convpool_cnn_c train --profile writes a trace and a table of its batches") {
  ScratchFolder scratch("convpool_cli_profile");
  const std::string program = NORMGRAD_CONVPOOL_CNN_C_PROGRAM;
  const std::string small =
      " --width 0.05 --train-size 120 --test-size 40 --batch 20 --init-images 40 --threads 1"
      " --no-progress --epochs 1";
  testing::check_profile_flag(
      program + " train --out " + (scratch / "model") + small, scratch.path.string(),
      program + " train --out " + (scratch / "refused") + small, scratch / "refused");
}

TEST_CASE("convpool_cnn_c trains, continues its run, and evaluates from the folder alone") {
  ScratchFolder scratch("convpool_cli");
  const std::string program = NORMGRAD_CONVPOOL_CNN_C_PROGRAM;
  const std::string folder = scratch / "model";
  const std::string small =
      " --width 0.05 --train-size 120 --test-size 40 --batch 20"
      " --init-images 40 --threads 1 --no-progress";
  const auto first = run_program(program + " train --out " + folder + " --norm weightnorm" + small +
                                 " --epochs 2 --precision bfloat16");
  INFO(first.output);
  REQUIRE(first.status == 0);
  CHECK(first.output.find("epoch   2/2") != std::string::npos);
  for (const char* file : {"config.json", "whitening.safetensors", "model.safetensors",
                           "state.safetensors", "train.csv"})
    CHECK(std::filesystem::exists(folder + "/" + file));

  CHECK(nlohmann::json::parse(std::ifstream(folder + "/config.json"))["model"]["precision"] ==
        "bfloat16");
  // Another --epochs is another schedule: refused, and the folder is left alone.
  const auto longer = run_program(program + " train --out " + folder + " --epochs 3");
  INFO(longer.output);
  CHECK(longer.status == 1);
  CHECK(longer.output.find("--epochs 2, not 3") != std::string::npos);
  // The same run again: nothing left to do.
  const auto again = run_program(program + " train --out " + folder + " --threads 1");
  INFO(again.output);
  CHECK(again.status == 0);
  CHECK(again.output.find("continuing") != std::string::npos);
  CHECK(again.output.find("after 2 epochs") != std::string::npos);

  const auto evaluated = run_program(program + " evaluate --model " + folder + " --threads 1");
  INFO(evaluated.output);
  REQUIRE(evaluated.status == 0);
  CHECK(evaluated.output.find("on 40 fashion-mnist test images") != std::string::npos);
  // The test error evaluate prints is the one training recorded for its last epoch.
  std::ifstream csv(folder + "/train.csv");
  std::string line, last;
  while (std::getline(csv, line)) last = line;
  const double recorded =
      std::stod(last.substr(last.find(',', last.find(',', last.find(',') + 1) + 1) + 1));
  char expected[32];
  std::snprintf(expected, sizeof expected, "test error %.2f%%", 100 * recorded);
  CHECK(evaluated.output.find(expected) != std::string::npos);
}

TEST_CASE("convpool_cnn_c refuses bad flags, specs, data and folders before any work") {
  ScratchFolder scratch("convpool_cli_bad");
  const std::string program = NORMGRAD_CONVPOOL_CNN_C_PROGRAM;
  const auto refused = [&](const std::string& arguments, const char* message) {
    check_refused(program, arguments, message, scratch / "out");
  };
  const std::string out = " --out " + (scratch / "out");
  refused("train" + out + " --norm groupnorm", "unknown normaliser 'groupnorm'");
  refused("train" + out + " --width 0.001", "--width 0.001 leaves");
  refused("train" + out + " --width 0", "--width: must be a positive number");
  refused("train" + out + " --dataset cifar100", "--dataset");
  refused("train" + out + " --dataset cifar10", "needs --data");
  refused("train" + out + " --dataset cifar10 --data " + (scratch / "nowhere"), "is not a folder");
  refused("train" + out + " --train-size 70000", "--train-size 70000");
  refused("train" + out + " --device cuda:7", "--device cuda:7");
  refused("train" + out + " --conv implicit", "--conv implicit needs a CUDA device");
  refused("train" + out + " --conv winograd", "--conv");
  refused("train" + out + " --precision float16", "--precision");
  refused("experiment" + out + " --precision float16", "--precision");
  refused("train" + out + " --train-size 100 --batch 200", "--batch 200");
  refused("evaluate --model " + (scratch / "nowhere"), "no config.json");
  refused("translate", "subcommand");
}

#endif
