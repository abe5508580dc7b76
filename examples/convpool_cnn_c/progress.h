#pragma once
// Progress of a training run on stderr. On a terminal, one line redrawn in place: the epoch, a
// bar over its batches, a smoothed loss and the time left for the whole run. Elsewhere (a log
// file, CI) only the line that main prints after each epoch.

#include <chrono>
#include <cstdint>
#include <string>

#include "common/number_text.h"
#include "training.h"

namespace convpool_cnn_c {

class ProgressDisplay {
 public:
  // bar: redraw a line on stderr; total_steps: what is left of the run, in steps.
  ProgressDisplay(bool bar, std::int64_t total_steps);
  void update(const StepReport& report);  // after every step
  void clear();                           // before printing an epoch's line
  static bool stderr_is_terminal();

 private:
  bool bar_;
  std::int64_t total_steps_, steps_ = 0;
  double smoothed_loss_ = 0;
  double last_draw_ = -1;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

using examples::format_duration;  // "1h02m", "4m05s", "12s"

}  // namespace convpool_cnn_c
