#include "progress.h"

#include <cmath>
#include <cstdio>

namespace nmt {

ProgressDisplay::ProgressDisplay(std::ostream* out, bool bar, std::int64_t total_steps)
    : out_(out), bar_(bar), total_steps_(total_steps) {}

void ProgressDisplay::update(std::int64_t step, double token_loss, double tokens_per_second,
                             double dev_loss, double elapsed) {
  if (out_ == nullptr) return;
  if (first_step_ < 0) {
    first_step_ = step - 1;
    smoothed_loss_ = token_loss;
    smoothed_speed_ = tokens_per_second;
  }
  smoothed_loss_ = 0.95 * smoothed_loss_ + 0.05 * token_loss;
  smoothed_speed_ = 0.95 * smoothed_speed_ + 0.05 * tokens_per_second;
  const double per_step = elapsed / static_cast<double>(step - first_step_);
  const std::string left = format_duration(per_step * static_cast<double>(total_steps_ - step));
  char line[256];
  if (bar_) {
    if (elapsed - last_draw_ < 0.2 && step != total_steps_ && dev_loss < 0) return;
    last_draw_ = elapsed;
    const int width = 24;
    const int filled =
        static_cast<int>(width * static_cast<double>(step) / static_cast<double>(total_steps_));
    std::string bar(static_cast<std::size_t>(filled), '#');
    bar.resize(width, '.');
    std::snprintf(line, sizeof line, "\r[%s] step %lld/%lld  loss %.3f  %.0f tok/s  %s left ",
                  bar.c_str(), static_cast<long long>(step), static_cast<long long>(total_steps_),
                  smoothed_loss_, smoothed_speed_, left.c_str());
    *out_ << line << std::flush;
    line_open_ = true;
  } else if (dev_loss >= 0) {
    std::snprintf(line, sizeof line,
                  "step %lld/%lld  loss %.3f  dev loss %.3f  %.0f tok/s  %s left\n",
                  static_cast<long long>(step), static_cast<long long>(total_steps_),
                  smoothed_loss_, dev_loss, smoothed_speed_, left.c_str());
    *out_ << line << std::flush;
  }
}

void ProgressDisplay::note(const std::string& text) {
  if (out_ == nullptr) return;
  if (line_open_) *out_ << "\n";
  line_open_ = false;
  *out_ << text << std::flush;
}

void ProgressDisplay::finish(const std::string& text) { note(text); }

}  // namespace nmt
