#pragma once
// Timing a training step of one model with each normaliser, as the paper's speed tables do
// (seconds per 100 steps, and the saving over LayerNorm): the norms take turns in rounds, each
// round timing `steps` steps of every norm after `warmup` untimed ones, so that a slow spell of
// a shared machine falls on all of them. A norm's figure is its median step over all rounds,
// times 100; its spread is the range of its steps over that median.
//
//   auto timings = examples::time_in_rounds(norms, {.steps = 10, .rounds = 2, .warmup = 2},
//                                           [&](std::size_t n) { trainers[n]->step(batch); });
//   std::printf("%s", examples::timing_markdown(timings, {{"layernorm", 392}, ...}).c_str());

#include <cstdint>
#include <cstdio>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace examples {

struct NormTiming {
  std::string norm;
  std::vector<double> step_seconds;      // every timed step, in order
  double seconds_per_100_steps() const;  // the median step, times 100
  double spread() const;                 // (slowest - fastest) / median of the steps
};

struct Rounds {
  std::int64_t steps = 10, rounds = 2, warmup = 2;
};

// Runs `step(n)` for norm n as `rounds` says and times each call (the call must wait for its
// device: a loss read back does). `progress`, when given, hears each norm's round as it ends.
std::vector<NormTiming> time_in_rounds(const std::vector<std::string>& norms, const Rounds& rounds,
                                       const std::function<void(std::size_t)>& step,
                                       std::FILE* progress = nullptr);

// The table: norm, s per 100 steps, spread, saving over LayerNorm, and the paper's seconds and
// saving for the norms `paper_seconds` names (by canonical spec, "prmsnorm:0.0625").
std::string timing_markdown(const std::vector<NormTiming>& timings,
                            const std::map<std::string, double>& paper_seconds);
std::string timing_csv(const std::vector<NormTiming>& timings);
// <folder>/<name>.csv (timing_csv) and <name>.md (`markdown`, timing_markdown's table), each
// written atomically.
void write_timing_tables(const std::string& folder, const std::string& name,
                         const std::vector<NormTiming>& timings, const std::string& markdown,
                         const std::string& program);
// For a report, how such a table was measured and what its spread is: "2 rounds of 5 timed
// steps after 1 untimed, the norms taking turns. The spread is ...".
std::string rounds_text(const Rounds& rounds);

// Whether a norm spec names LayerNorm.
bool is_layernorm(const std::string& norm);

// The paper's saving over LayerNorm in training time, 100 (1 - T / T_LN), of one run of an
// experiment's `runs` (each with .norm and .history, validation records with .step and
// .seconds); nullopt for LayerNorm's own run, or when there is none.
template <class Run>
std::optional<double> saving_over_layernorm(const std::vector<Run>& runs, const Run& run);

// The middle value, or the mean of the middle two; of one value at least.
double median(std::vector<double> values);

// (largest - smallest) / median of the values; 0 for none or a median of 0.
double relative_range(std::vector<double> values);

// Training seconds per 100 steps over a run's validation records (each with .step and
// .seconds, the training time so far), and the spread of the intervals between validations:
// (slowest - fastest) / median of their seconds per step.
template <class Record> double run_seconds_per_100_steps(const std::vector<Record>& history) {
  return history.empty() ? 0.0
                         : 100 * history.back().seconds / static_cast<double>(history.back().step);
}
template <class Record> double run_seconds_spread(const std::vector<Record>& history) {
  std::vector<double> per_step;
  for (std::size_t i = 0; i < history.size(); ++i) {
    const double seconds = history[i].seconds - (i > 0 ? history[i - 1].seconds : 0.0);
    const auto steps = history[i].step - (i > 0 ? history[i - 1].step : 0);
    per_step.push_back(seconds / static_cast<double>(steps));
  }
  return relative_range(per_step);
}
template <class Run>
std::optional<double> saving_over_layernorm(const std::vector<Run>& runs, const Run& run) {
  for (const Run& other : runs)
    if (is_layernorm(other.norm) && &other != &run)
      return 100 * (1 - run_seconds_per_100_steps(run.history) /
                            run_seconds_per_100_steps(other.history));
  return std::nullopt;
}

}  // namespace examples
