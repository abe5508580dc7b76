#pragma once
// Progress of a training run. On a terminal: one line redrawn in place with a bar, the step,
// the loss per token (smoothed), tokens per second and the time left. Elsewhere (a log file),
// one plain line at each dev loss measurement. Notes (dev BLEU) go on their own lines.

#include <cstdint>
#include <ostream>
#include <string>

#include "common/number_text.h"

namespace nmt {

class ProgressDisplay {
 public:
  ProgressDisplay(std::ostream* out, bool bar, std::int64_t total_steps);

  // After every step; dev_loss < 0 when none was measured; elapsed: this invocation's seconds.
  void update(std::int64_t step, double token_loss, double tokens_per_second, double dev_loss,
              double elapsed);
  void note(const std::string& text);
  void finish(const std::string& text);

 private:
  std::ostream* out_;
  bool bar_;
  std::int64_t total_steps_;
  std::int64_t first_step_ = -1;
  double smoothed_loss_ = 0;
  double smoothed_speed_ = 0;
  double last_draw_ = -1;
  bool line_open_ = false;
};

using examples::format_duration;  // "1h02m", "4m05s", "12s"

}  // namespace nmt
