#pragma once
// The progress of a training run, as every program shows it. On a terminal, one line redrawn
// in place: a bar over the run's steps, the step (and epoch) under way, a smoothed loss, the
// rate and the time left. Elsewhere (a log file, CI), where carriage returns would pile up,
// plain lines at the points the program chooses (report) or at the end of every epoch. Notes
// (a dev score, the end of a run) go on lines of their own in both forms.

#include <chrono>
#include <cstdint>
#include <ostream>
#include <string>

namespace examples {

// Whether stderr is a terminal, which decides whether a program redraws a line by default.
bool stderr_is_terminal();

// The seconds since `start` on the steady clock: the line's measure, and the programs' for
// their steps and epochs.
double seconds_since(std::chrono::steady_clock::time_point start);

struct ProgressSettings {
  std::ostream* out = nullptr;   // nothing is printed when null
  bool redraw = false;           // one line redrawn in place instead of plain lines
  std::string label{};           // names the run at the start of each line ("rmsnorm b=128")
  std::int64_t total_steps = 0;  // the step the run ends at
  // With epochs: the line names the epoch under way, and a plain line follows every epoch's
  // last step. epochs: how many the run has, or 0 when its steps are not whole epochs.
  std::int64_t steps_per_epoch = 0;
  std::int64_t epochs = 0;
  // The rate's unit. The rate is steps per second on the line's own clock, unless update()
  // is given each step's own rate (tokens per second, say), which the line then smooths.
  std::string rate_unit = "steps/s";
};

class ProgressLine {
 public:
  explicit ProgressLine(ProgressSettings settings);

  // After every step. `step` counts the steps done since the run began, so that a resumed run
  // starts past 1; the rate and the time left are measured over the steps of this process after
  // its first. `rate`:
  // this step's own rate in rate_unit, or 0 for steps per second.
  void update(std::int64_t step, double loss, double rate = 0);
  // Where the run stands as a plain line (not on a terminal; there it redraws the line): the
  // step, the mean loss since the previous plain line, `extra` ("dev loss 3.21"), the rate
  // and the time left.
  void report(const std::string& extra = {});
  // `text` (ending in a newline) on lines of its own, the redrawn line cleared first.
  void note(const std::string& text);
  // Clears the redrawn line, before the program prints elsewhere on the terminal.
  void clear();

 private:
  std::string where() const;               // "label: step 120/500  epoch 2/10" and the like
  std::string rate_and_time_left() const;  // "  12.3 steps/s  4m05s left"; empty at first
  void draw();

  ProgressSettings settings_;
  std::chrono::steady_clock::time_point start_{};  // the end of this process's first step
  std::int64_t first_step_ = -1;                   // the step it ended
  std::int64_t step_ = 0;
  double smoothed_loss_ = 0, smoothed_rate_ = 0;
  double loss_sum_ = 0;  // since the previous plain line
  std::int64_t loss_count_ = 0;
  double last_draw_ = -1;
  bool line_open_ = false;  // a redrawn line is on the terminal
};

}  // namespace examples
