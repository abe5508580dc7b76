#pragma once
// The `train`, `experiment` and `time` subcommands of the programs whose runs train to
// validations (validated_run.h): attentive_reader and order_embedding. Each adds its shared
// flags on construction; the program adds its own to `command`, and calls the subcommand's
// method once the command line is parsed.
//
//   examples::TrainCommand<RunConfig> train(app, "attentive_reader", {.training = kPaperTraining},
//                                           "out/attentive_reader/rmsnorm", "the questions");
//   train.add("--dim", train.run.model.dim, "/model/dim", "LSTM size")->check(examples::kPositive);
//   train.add_training_flags({.batch = "questions per batch", ...});
//   ...CLI11_PARSE...
//   if (*train.command) return train.train<ModelFolder>(parse_model_norm, train_in_folder);

#include <normgrad/normgrad.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <filesystem>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "common/command_flags.h"
#include "common/experiment_data.h"
#include "common/norm_experiment.h"
#include "common/progress.h"
#include "common/run_folder.h"
#include "common/step_profile.h"

namespace examples {

struct TrainingFlagsHelp {
  std::string batch, clip, seed;  // "questions per batch", how it clips, what the seed draws
};

// `train`: --out (the model folder, whose run is continued), --data (needed to start one), the
// settings' flags, each with its place in config.json, so that one given for a folder that
// holds a run must agree with it; --no-progress, --device, --threads. `Config` has model.norm,
// model.seed, data.folder and training (a StepTraining).
template <class Config> class TrainCommand {
 public:
  TrainCommand(CLI::App& app, std::string program, const Config& defaults, std::string out,
               const std::string& data_help)
      : command(app.add_subcommand("train", "train a model, or continue its run")),
        run(defaults),
        program_(std::move(program)),
        out_(std::move(out)) {
    command->add_option("--out", out_, "the model folder (a run in it is continued)")
        ->capture_default_str();
    flags_.emplace_back("--data", nlohmann::json::json_pointer("/data/folder"));
    command->add_option("--data", run.data.folder, data_help);
  }
  TrainCommand(const TrainCommand&) = delete;  // the flags hold references into it

  // A setting's flag; `setting` is its JSON pointer in config.json ("/model/dim").
  template <class T>
  CLI::Option* add(const char* flag, T& value, const char* setting, const std::string& help) {
    flags_.emplace_back(flag, nlohmann::json::json_pointer(setting));
    return command->add_option(flag, value, help)->capture_default_str();
  }

  // --steps, --batch, --valid-every, --lr, --clip, --seed (the model's and the batches'), then
  // --no-progress, --device, --threads and --profile.
  void add_training_flags(const TrainingFlagsHelp& help) {
    auto& t = run.training;
    add("--steps", t.steps, "/training/steps", "training steps")->check(kPositive);
    add("--batch", t.batch_size, "/training/batch_size", help.batch)->check(kPositive);
    add("--valid-every", t.valid_every, "/training/valid_every", "steps between validations")
        ->check(kPositive);
    add("--lr", t.learning_rate, "/training/learning_rate", "Adam's learning rate")
        ->check(kPositive);
    add("--clip", t.clip, "/training/clip", help.clip)->check(kNonNegative);
    add("--seed", run.model.seed, "/model/seed", help.seed);
    command->add_flag("--no-progress", no_progress_, "no progress line on a terminal");
    add_device_flags(command, device_);
    add_profile_flags(command, profile_);
  }

  // Trains the folder's run, which no flag given may contradict, or else the flags' (its norm
  // checked, its data folder made absolute): train_in_folder(folder, run, device, bar, log,
  // profile).
  template <class Folder, class CheckNorm, class Train>
  int train(const CheckNorm& check_norm, const Train& train_in_folder) const {
    const normgrad::Device device = use_device(device_, program_);
    const Folder folder(out_);
    NG_CHECK(folder.has_config() || !run.data.folder.empty(), program_,
             "--data is needed to start a run in '", out_, "'");
    Config asked = run;
    if (!asked.data.folder.empty())
      asked.data.folder = std::filesystem::absolute(asked.data.folder).lexically_normal().string();
    asked.training.seed = asked.model.seed;
    check_norm(asked.model.norm);
    const auto given = [&](const char* flag) { return command->count(flag) > 0; };
    train_in_folder(folder, run_to_train(folder, asked, flags_, given), device,
                    !no_progress_ && stderr_is_terminal(), stdout, profile_);
    return 0;
  }

  CLI::App* command;
  Config run;  // the flags' values, from the defaults

 private:
  std::string program_, out_;
  FlagSettings flags_;
  bool no_progress_ = false;
  DeviceFlags device_;
  ProfileFlags profile_;
};

// `experiment`: --data, or --corpus to build the local task from (experiment_data.h), --budget
// (the program's budgets, budget.h), --steps, --out, --norms, --seed, --no-progress, --device,
// --threads.
class ExperimentCommand {
 public:
  ExperimentCommand(CLI::App& app, const std::string& help, ExperimentData local_task,
                    const std::vector<std::string>& budgets, const std::string& budget_help,
                    std::string out, std::vector<std::string> norms)
      : command(app.add_subcommand("experiment", help)), local_task_(std::move(local_task)) {
    flags.out = std::move(out);
    flags.norms = std::move(norms);
    add_experiment_data_flags(command, data_, local_task_);
    add_experiment_flags(command, flags, budgets, budget_help);
    add_device_flags(command, device_);
  }
  ExperimentCommand(const ExperimentCommand&) = delete;  // the flags hold references into it

  // Checks the norms, finds the data (--data, or the local task `build` makes from --corpus)
  // and makes a budget's `run` the runs' own: that data, --seed and --steps. Returns the device,
  // with --threads (or else `threads`) set.
  template <class Config, class CheckNorm>
  normgrad::Device start(Config& run, int threads, const CheckNorm& check_norm,
                         const BuildLocalTask& build, const std::string& program) const {
    const normgrad::Device device = parse_device(device_.device, program);
    for (const std::string& norm : flags.norms) check_norm(norm);
    const std::string data = experiment_data_folder(data_, flags.out, local_task_, build, program);
    run.data.folder = std::filesystem::absolute(data).lexically_normal().string();
    run.model.seed = run.training.seed = flags.seed;
    if (flags.steps > 0) run.training.steps = flags.steps;
    use_device(device_, program, threads);
    return device;
  }
  bool progress_bar() const { return !flags.no_progress && stderr_is_terminal(); }

  CLI::App* command;
  ExperimentFlags flags;

 private:
  ExperimentData local_task_;
  ExperimentDataFlags data_;
  DeviceFlags device_;
};

// `time`: each norm's training step timed in rounds (norm_timing.h) at the sizes the program's
// flags set in `settings` (with norms, rounds and sizes(): "batch 64, 240 units"); --norms,
// --steps, --rounds, --warmup, --out, --device, --threads. The table goes to stdout beside the
// paper's seconds, and with --out into <out>/<name>.csv and .md.
template <class Settings> class TimeCommand {
 public:
  TimeCommand(CLI::App& app, const std::string& help, std::string name)
      : command(app.add_subcommand("time", help)), name_(std::move(name)) {
    add_rounds_flags(command, settings.norms, settings.rounds);
    command->add_option("--out", out_, "a folder for " + name_ + ".csv and " + name_ + ".md");
    add_device_flags(command, device_);
  }
  TimeCommand(const TimeCommand&) = delete;  // the flags hold references into it

  // time_norms(settings, device, progress): the program's timing.
  template <class CheckNorm, class TimeNorms>
  int time(const std::string& program, const CheckNorm& check_norm, const TimeNorms& time_norms,
           const std::map<std::string, double>& paper_seconds) const {
    const normgrad::Device device = use_device(device_, program);
    for (const std::string& norm : settings.norms) check_norm(norm);
    std::fprintf(stderr, "%s: timing %zu norms at %s on %s: %lld rounds of %lld steps each\n",
                 program.c_str(), settings.norms.size(), settings.sizes().c_str(),
                 device.str().c_str(), static_cast<long long>(settings.rounds.rounds),
                 static_cast<long long>(settings.rounds.steps));
    const std::vector<NormTiming> timings = time_norms(settings, device, stderr);
    const std::string table = timing_markdown(timings, paper_seconds);
    std::printf("%s", table.c_str());
    if (!out_.empty()) write_timing_tables(out_, name_, timings, table, program);
    return 0;
  }

  CLI::App* command;
  Settings settings;  // the flags' values

 private:
  std::string name_, out_;
  DeviceFlags device_;
};

}  // namespace examples
