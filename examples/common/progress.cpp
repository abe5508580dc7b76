#include "progress.h"

#include <unistd.h>

#include <algorithm>
#include <utility>

#include "number_text.h"

namespace examples {

namespace {

constexpr int kBarWidth = 30;
constexpr double kRedrawSeconds = 0.1;  // at most ten redraws a second
constexpr double kSmoothing = 0.05;     // the newest value's weight in the line's averages

}  // namespace

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

bool stderr_is_terminal() { return ::isatty(STDERR_FILENO) == 1; }

ProgressLine::ProgressLine(ProgressSettings settings) : settings_(std::move(settings)) {}

void ProgressLine::update(std::int64_t step, double loss, double rate) {
  if (settings_.out == nullptr) return;
  if (first_step_ < 0) {
    // The clock starts here, at the end of this process's first step, so that neither what
    // came before training nor the first step's warm-up counts in the rate.
    start_ = std::chrono::steady_clock::now();
    first_step_ = step;
    smoothed_loss_ = loss;
    smoothed_rate_ = rate;
  }
  step_ = step;
  smoothed_loss_ = (1 - kSmoothing) * smoothed_loss_ + kSmoothing * loss;
  smoothed_rate_ = (1 - kSmoothing) * smoothed_rate_ + kSmoothing * rate;
  loss_sum_ += loss;
  ++loss_count_;
  if (!settings_.redraw) {
    if (settings_.steps_per_epoch > 0 && step % settings_.steps_per_epoch == 0) report();
    return;
  }
  // Redrawn when enough time has passed, and always at the last step.
  if (step == settings_.total_steps || seconds_since(start_) - last_draw_ >= kRedrawSeconds) draw();
}

void ProgressLine::report(const std::string& extra) {
  if (settings_.out == nullptr) return;
  if (settings_.redraw) {
    draw();
    return;
  }
  const double loss = loss_count_ > 0 ? loss_sum_ / static_cast<double>(loss_count_) : 0.0;
  *settings_.out << where() << "  loss " << format_number("%.4f", loss)
                 << (extra.empty() ? "" : "  " + extra) << rate_and_time_left() << "\n"
                 << std::flush;
  loss_sum_ = 0;
  loss_count_ = 0;
}

void ProgressLine::note(const std::string& text) {
  if (settings_.out == nullptr) return;
  clear();
  *settings_.out << text << std::flush;
}

void ProgressLine::clear() {
  if (settings_.out == nullptr || !line_open_) return;
  *settings_.out << "\r\x1b[K" << std::flush;
  line_open_ = false;
}

std::string ProgressLine::where() const {
  // Appended piece by piece: GCC 12 at -O3 warns falsely (-Wrestrict) about "literal" + string.
  std::string text = settings_.label.empty() ? "" : settings_.label + ": ";
  text += "step ";
  text += std::to_string(step_);
  text += "/";
  text += std::to_string(settings_.total_steps);
  if (settings_.steps_per_epoch > 0) {
    // The epoch under way; after its last step, the epoch just done.
    text += "  epoch ";
    text += std::to_string(std::max<std::int64_t>(0, step_ - 1) / settings_.steps_per_epoch + 1);
    if (settings_.epochs > 0) {
      text += "/";
      text += std::to_string(settings_.epochs);
    }
  }
  return text;
}

std::string ProgressLine::rate_and_time_left() const {
  const double elapsed = seconds_since(start_);
  const auto steps = static_cast<double>(step_ - first_step_);
  if (steps == 0 || elapsed <= 0) return "";
  const double rate = smoothed_rate_ > 0 ? smoothed_rate_ : steps / elapsed;
  const double left = elapsed / steps * static_cast<double>(settings_.total_steps - step_);
  return format_number(smoothed_rate_ > 0 ? "  %.0f " : "  %.1f ", rate) + settings_.rate_unit +
         "  " + format_duration(left) + " left";
}

void ProgressLine::draw() {
  last_draw_ = seconds_since(start_);
  const double done = settings_.total_steps > 0
                          ? static_cast<double>(step_) / static_cast<double>(settings_.total_steps)
                          : 0.0;
  const int filled = std::clamp(static_cast<int>(done * kBarWidth), 0, kBarWidth);
  const std::string bar = std::string(static_cast<std::size_t>(filled), '#') +
                          std::string(static_cast<std::size_t>(kBarWidth - filled), '.');
  std::string text = where();
  // The bar between the label and the step: "rmsnorm b=128: [####......] step 120/500".
  const std::size_t label_end = settings_.label.empty() ? 0 : settings_.label.size() + 2;
  text.insert(label_end, "[" + bar + "] ");
  *settings_.out << "\r" << text << "  loss " << format_number("%.4f", smoothed_loss_)
                 << rate_and_time_left() << "\x1b[K" << std::flush;
  line_open_ = true;
}

}  // namespace examples
