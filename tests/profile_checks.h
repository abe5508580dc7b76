#pragma once
// The training programs' --profile, run as a user would: a few steps after a warm-up profiled
// into a trace and a table, and an unwritable path refused before any work.

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>

#include "run_program.h"

namespace testing {

// `train` (a program's training command, which takes at least 3 steps) with --profile into
// `folder`: steps 2 and 3 profiled, the trace a Trace Event JSON with kernels in it, the table
// printed and in its CSV. Then `refused_train` (one that would make the folder `made`) with a
// --profile that cannot be written fails at once, naming the flag, and makes nothing.
inline void check_profile_flag(const std::string& train, const std::string& folder,
                               const std::string& refused_train, const std::string& made) {
  namespace fs = std::filesystem;
  const std::string trace = folder + "/profile/step.json";
  const auto profiled =
      run_program(train + " --profile " + trace + " --profile-warmup 1 --profile-steps 2");
  INFO(profiled.output);
  REQUIRE(profiled.status == 0);
  CHECK(profiled.output.find("profile of steps 2 to 3") != std::string::npos);
  CHECK(profiled.output.find("(outside the kernels)") != std::string::npos);
  CHECK(profiled.output.find("ceilings: copy ") != std::string::npos);
  std::ifstream trace_file(trace);
  const nlohmann::json events = nlohmann::json::parse(trace_file)["traceEvents"];
  int kernels = 0;
  for (const nlohmann::json& event : events)
    if (event["ph"] == "X" && event.contains("args") && event["args"].contains("flops")) ++kernels;
  CHECK(kernels > 10);
  std::ifstream table(folder + "/profile/step.csv");
  const std::string csv((std::istreambuf_iterator<char>(table)), {});
  CHECK(csv.rfind("kernel,family,pass,", 0) == 0);
  CHECK(csv.find("matmul") != std::string::npos);

  const auto refused = run_program(refused_train + " --profile /proc/normgrad/step.json");
  INFO(refused.output);
  CHECK(refused.status != 0);
  CHECK(refused.output.find("--profile") != std::string::npos);
  CHECK(refused.output.find("cannot be written") != std::string::npos);
  CHECK_FALSE(fs::exists(made));
}

}  // namespace testing
