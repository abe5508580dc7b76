#pragma once
// Progress of a training run on stderr. On a terminal, one line redrawn in place: a bar,
// steps, a smoothed loss, throughput and the time left. Elsewhere (a log file, CI), where
// carriage returns would pile up, one plain line per epoch and one at the end.

#include <cstdint>
#include <string>

#include "training.h"

namespace mnist_mlp {

class ProgressDisplay {
 public:
  // label names the run ("rmsnorm b=128"); bar chooses the redrawn line over plain lines.
  ProgressDisplay(std::string label, bool bar);

  void update(const StepReport& report);  // after every step
  void finish(const RunResult& result);   // after the run, with its test accuracy

  // Whether stderr is a terminal, which decides the default form.
  static bool stderr_is_terminal();

 private:
  void draw_bar(const StepReport& report);

  std::string label_;
  bool bar_;
  double smoothed_loss_ = 0;   // exponential moving average, for the bar
  double epoch_loss_sum_ = 0;  // for the per-epoch line
  std::int64_t epoch_steps_ = 0;
  double last_draw_seconds_ = -1;
};

}  // namespace mnist_mlp
