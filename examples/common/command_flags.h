#pragma once
// CLI11 flags that several programs' subcommands share: the device and threads, the flags of an
// `experiment` (budget, steps, output folder, norms, seed, progress) and the rounds of a `time`.
//
//   examples::DeviceFlags device;
//   examples::add_device_flags(train_command, device);

#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>
#include <vector>

#include "common/device_flag.h"
#include "common/norm_timing.h"
#include "common/number_checks.h"
#include "common/precision.h"

namespace examples {

struct DeviceFlags {
  std::string device = "cpu";
  int threads = 0;
};

inline void add_device_flags(CLI::App* command, DeviceFlags& flags) {
  command->add_option("--device", flags.device, "cpu, cuda or cuda:N")->capture_default_str();
  command->add_option("--threads", flags.threads, "CPU threads (0: OMP_NUM_THREADS or all cores)")
      ->check(kNonNegative);
}

// A flag whose value must be a positive number, its default shown in --help.
template <class T>
CLI::Option* add_positive(CLI::App* command, const std::string& flag, T& value,
                          const std::string& help) {
  return command->add_option(flag, value, help)->check(kPositive)->capture_default_str();
}

// The device the flags name (parse_device), with --threads set for this process, or
// `default_threads` when it is not given (0: OMP_NUM_THREADS or all cores).
inline normgrad::Device use_device(const DeviceFlags& flags, const std::string& program,
                                   int default_threads = 0) {
  const normgrad::Device device = parse_device(flags.device, program);
  const int threads = flags.threads > 0 ? flags.threads : default_threads;
  if (threads > 0) normgrad::set_num_threads(threads);
  return device;
}

// Makes `option` the --precision flag (common/precision.h): float32 or bfloat16, described.
//
//   examples::precision_flag(train->add_option("--precision", settings.precision));
inline CLI::Option* precision_flag(CLI::Option* option) {
  return option
      ->description(
          "float32, or bfloat16: mixed precision (bfloat16 activations; parameters, "
          "gradients and the optimiser in float32)")
      ->check(CLI::IsMember(precision_names()));
}

struct ExperimentFlags {
  std::string budget = "demo";
  std::string out;
  std::vector<std::string> norms;
  std::int64_t steps = 0;  // or epochs, as add_experiment_flags' `count` says; 0: the budget's
  std::uint64_t seed = 1;
  bool no_progress = false;
};

// --budget (one of `budgets`, described by `budget_help`), --steps (or --epochs, where a run's
// budget is `count`ed in epochs), --out, --norms, --seed, --no-progress.
inline void add_experiment_flags(CLI::App* command, ExperimentFlags& flags,
                                 const std::vector<std::string>& budgets,
                                 const std::string& budget_help,
                                 const std::string& count = "steps") {
  command->add_option("--budget", flags.budget, budget_help)
      ->check(CLI::IsMember(budgets))
      ->capture_default_str();
  command->add_option("--" + count, flags.steps, count + " of every run (0: the budget's)")
      ->check(kNonNegative)
      ->capture_default_str();
  command->add_option("--out", flags.out, "the experiment's folder, a model folder per norm")
      ->capture_default_str();
  command->add_option("--norms", flags.norms, "the norms to compare")->capture_default_str();
  command->add_option("--seed", flags.seed, "the same for every run")->capture_default_str();
  command->add_flag("--no-progress", flags.no_progress, "no progress line on a terminal");
}

// --norms (to time), --steps, --rounds, --warmup.
inline void add_rounds_flags(CLI::App* command, std::vector<std::string>& norms, Rounds& rounds) {
  command->add_option("--norms", norms, "the norms to time")->capture_default_str();
  command->add_option("--steps", rounds.steps, "timed steps of each norm in each round")
      ->check(kPositive)
      ->capture_default_str();
  command->add_option("--rounds", rounds.rounds, "rounds, the norms taking turns")
      ->check(kPositive)
      ->capture_default_str();
  command->add_option("--warmup", rounds.warmup, "untimed steps of each norm first")
      ->check(kNonNegative)
      ->capture_default_str();
}

}  // namespace examples
