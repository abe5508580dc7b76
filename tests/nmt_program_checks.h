#pragma once
// Checks the translation programs (gru_nmt, transformer_nmt) share, run as a user would.

#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "parallel_text_fixture.h"
#include "run_program.h"
#include "scratch_folder.h"

namespace testing {

// `program` (its path) trains 3 steps of its tiny preset with --precision bfloat16 into a
// model folder that keeps the precision in config.json, then translates and scores from the
// folder alone; a precision it does not know is refused before any folder is made, by train
// and by experiment. `name` names the fixture files and the scratch folder.
inline void check_mixed_precision_program(const std::string& program, const std::string& name) {
  namespace fs = std::filesystem;
  const auto train = small_parallel_corpus(name + "_train", 60);
  const auto dev = small_parallel_corpus(name + "_dev", 6);
  ScratchFolder scratch(name);
  const std::string folder = scratch / "model";
  const std::string corpus_flags = " --train-source " + train.source + " --train-target " +
                                   train.target + " --dev-source " + dev.source + " --dev-target " +
                                   dev.target;
  const auto refused = run_program(program + " train --model " + (scratch / "x") + corpus_flags +
                                   " --precision float16");
  CHECK(refused.status != 0);
  CHECK(refused.output.find("--precision") != std::string::npos);
  CHECK_FALSE(fs::exists(scratch / "x"));
  const auto experiment =
      run_program(program + " experiment --out " + (scratch / "e") + " --precision float16");
  CHECK(experiment.status != 0);
  CHECK(experiment.output.find("--precision") != std::string::npos);
  CHECK_FALSE(fs::exists(scratch / "e"));
  const auto trained = run_program(
      program + " train --model " + folder + corpus_flags +
      " --preset tiny --precision bfloat16 --steps 3 --dev-bleu-every 3 --dev-loss-every 3"
      " --threads 1 --no-progress-bar");
  INFO(trained.output);
  REQUIRE(trained.status == 0);
  CHECK(trained.output.find("precision = \"bfloat16\"") != std::string::npos);
  const auto config = nlohmann::json::parse(std::ifstream(folder + "/config.json"));
  CHECK(config.at("model").at("precision") == "bfloat16");

  std::ofstream(scratch / "input.en") << "the file could not be opened\nthe new window\n";
  const auto translated = run_program(program + " translate --model " + folder + " --beam 2 < " +
                                      (scratch / "input.en"));
  INFO(translated.output);
  CHECK(translated.status == 0);
  CHECK(std::count(translated.output.begin(), translated.output.end(), '\n') == 2);
  std::ofstream(scratch / "pair.en") << "the file\n";
  std::ofstream(scratch / "pair.de") << "die Datei\n";
  const auto scored = run_program(program + " score --model " + folder + " --source " +
                                  (scratch / "pair.en") + " --target " + (scratch / "pair.de"));
  INFO(scored.output);
  CHECK(scored.status == 0);
  CHECK(std::stod(scored.output) < 0);
}

}  // namespace testing
