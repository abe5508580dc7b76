#pragma once
// The loop every `experiment` runs: one run per norm, each in its own model folder under the
// experiment's folder, all trained the same way but for the norm. Every folder is checked
// before the first run trains, so that a folder holding another run is an Error at once rather
// than after hours of training; a folder holding this run is handed to the program again,
// whose training takes a finished run as it is and continues an unfinished one. The runs'
// results come back in the norms' order, for the report.
//
//   const examples::NormSweep sweep{.program = "attentive_reader", .out = out, .norms = norms,
//                                   .variant = "", .check = check_run};
//   const auto runs = examples::run_norm_sweep(sweep, [&](const examples::SweepRun& run) {
//     return train_and_test(run.norm, ModelFolder(run.folder));
//   });

#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/run_folder.h"

namespace examples {

struct SweepRun {
  std::string norm;
  std::string label;   // the norm, and what else sets the run apart: "rmsnorm, pre-norm"
  std::string folder;  // <out>/<run_folder_name(label)>
  std::size_t index = 0, count = 0;  // the run's place in the sweep, from 0, and the runs
};

struct NormSweep {
  std::string program;             // names the errors
  std::string out;                 // holds the runs' folders
  std::vector<std::string> norms;  // a run each, in this order
  std::string variant;             // follows each norm in the runs' labels: ", pre-norm"
  // Called for every run before the first trains: an Error for a norm the program does not
  // take, or when the run's folder holds another run (check_sweep_folder).
  std::function<void(const SweepRun& run)> check;
  // Says which run starts; "== <label>" on stdout when not given.
  std::function<void(const SweepRun& run)> announce = {};
};

// The sweep's runs, each checked; an Error when there are no norms.
std::vector<SweepRun> plan_norm_sweep(const NormSweep& sweep);

// Says that `run` starts, as sweep.announce does.
void announce_run(const NormSweep& sweep, const SweepRun& run);

// Runs `run(SweepRun)` for each run of the plan in turn, each announced, and returns what each
// returned.
template <class Run> auto run_norm_sweep(const NormSweep& sweep, const Run& run) {
  std::vector<decltype(run(SweepRun{}))> results;
  for (const SweepRun& planned : plan_norm_sweep(sweep)) {
    announce_run(sweep, planned);
    results.push_back(run(planned));
  }
  return results;
}

// The usual check of a run's folder: when it holds a run, its configuration (`stored`, as the
// program reads it back) must be `asked`, the one the experiment would write, but for the
// settings a run finds when it starts (`found_by_run`: the vocabulary's size, say); else an
// Error naming the folder.
void check_sweep_folder(const RunFolder& folder, const nlohmann::json& stored, nlohmann::json asked,
                        const std::vector<nlohmann::json::json_pointer>& found_by_run = {});

// check_sweep_folder for a program whose `Folder(path).read_config()` gives the configuration
// that its `to_json` writes: the folder of `run` against the run `asked`.
template <class Folder, class Config>
void check_sweep_run(const SweepRun& run, const Config& asked,
                     const std::vector<nlohmann::json::json_pointer>& found_by_run = {}) {
  const Folder folder(run.folder);
  if (folder.has_config())
    check_sweep_folder(folder, to_json(folder.read_config()), to_json(asked), found_by_run);
}

// A run's settings: the experiment's, `base`, with the run's norm, which every program's
// configuration keeps as model.norm.
template <class Config> Config with_norm(Config base, const std::string& norm) {
  base.model.norm = norm;
  return base;
}

}  // namespace examples
