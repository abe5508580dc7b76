#pragma once
// What the experiments of the programs that train to validations (validated_run.h) share:
// each norm's run trained in its folder (norm_sweep.h) while other processes' share of the CPU
// is measured, then tested; the norms' steps timed after the runs; the report's notes on the
// runs. Their budgets are found by name as every program's are (budget.h).

#include <normgrad/normgrad.h>

#include <cstdio>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common/budget.h"
#include "common/cpu_share.h"
#include "common/norm_sweep.h"
#include "common/norm_timing.h"
#include "common/number_text.h"
#include "common/run_folder.h"

namespace examples {

// The sweep over `Folder`s: each run's norm checked by `check_norm`, and the run its folder
// holds, if any, against `base` with the run's norm but for the settings `found_by_run`.
template <class Folder, class Config, class CheckNorm>
NormSweep model_sweep(const std::string& program, const std::string& out,
                      const std::vector<std::string>& norms, const Config& base,
                      const CheckNorm& check_norm,
                      const std::vector<nlohmann::json::json_pointer>& found_by_run) {
  const auto check = [=](const SweepRun& run) {
    check_norm(run.norm);
    check_sweep_run<Folder>(run, with_norm(base, run.norm), found_by_run);
  };
  return {.program = program, .out = out, .norms = norms, .variant = "", .check = check};
}

template <class Record, class Test> struct NormRun {
  std::string norm;
  std::vector<Record> history{};      // every validation's record
  Test test{};                        // of the weights the run kept
  std::optional<double> other_cpu{};  // other processes' share of the CPU while it trained
};

// Every run of `sweep` trained by `train(run)`, which returns its records, then tested by
// `test(run)`.
template <class Test, class Train, class TestRun>
auto train_and_test_norms(const NormSweep& sweep, const Train& train, const TestRun& test) {
  using Record = typename decltype(train(SweepRun{}))::value_type;
  return run_norm_sweep(sweep, [&](const SweepRun& run) {
    NormRun<Record, Test> result{.norm = run.norm};
    result.history = measure_other_processes(result.other_cpu, [&] { return train(run); });
    result.test = test(run);
    return result;
  });
}

// The norms timed at `timing`'s sizes (sizes(): "batch 64, 240 units") after the runs, as
// `time` times them, each round on stdout; written as CSV into `file` of the folder `out`.
template <class Settings, class TimeNorms>
std::vector<NormTiming> time_after_runs(Settings timing, const std::vector<std::string>& norms,
                                        const TimeNorms& time_norms, normgrad::Device device,
                                        const RunFolder& out, const std::string& file) {
  timing.norms = norms;
  std::printf("== each norm's step at %s\n", timing.sizes().c_str());
  std::fflush(stdout);
  std::vector<NormTiming> timings = time_norms(timing, device, stdout);
  out.write_text(file, timing_csv(timings));
  return timings;
}

// The report's lines on the runs that shared the CPU with other processes, and the figure.
template <class Run>
std::string runs_notes(const std::vector<Run>& runs, const std::optional<std::string>& figure,
                       const std::string& figure_title) {
  std::string notes;
  for (const Run& run : runs)
    if (run.other_cpu)
      notes += "\n- " + run.norm + ": other processes took " +
               format_number("%.1f%%", 100 * *run.other_cpu) + " of the CPU while it trained.";
  notes += "\n";
  if (figure) notes += "\n![" + figure_title + "](" + *figure + ")\n";
  return notes;
}

}  // namespace examples
