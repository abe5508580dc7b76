#include "progress.h"

#include <unistd.h>

#include <cstdio>
#include <string>
#include <utility>

namespace mnist_mlp {

namespace {

constexpr int kBarWidth = 30;
constexpr double kRedrawSeconds = 0.1;  // at most ten redraws a second
constexpr double kSmoothing = 0.05;     // weight of the newest loss in the bar's average

std::string minutes_seconds(double seconds) {
  const auto whole = static_cast<long long>(seconds + 0.5);
  char text[32];
  std::snprintf(text, sizeof text, "%lld:%02lld", whole / 60, whole % 60);
  return text;
}

}  // namespace

ProgressDisplay::ProgressDisplay(std::string label, bool bar)
    : label_(std::move(label)), bar_(bar) {}

bool ProgressDisplay::stderr_is_terminal() { return ::isatty(STDERR_FILENO) == 1; }

void ProgressDisplay::update(const StepReport& report) {
  smoothed_loss_ =
      report.step == 1 ? report.loss : (1 - kSmoothing) * smoothed_loss_ + kSmoothing * report.loss;
  if (bar_) {
    // Redraw at most every kRedrawSeconds of training, and always at the last step.
    if (report.step == report.total_steps ||
        report.wall_seconds - last_draw_seconds_ >= kRedrawSeconds) {
      last_draw_seconds_ = report.wall_seconds;
      draw_bar(report);
    }
    return;
  }
  epoch_loss_sum_ += report.loss;
  ++epoch_steps_;
  if (report.steps_per_epoch > 0 && report.step % report.steps_per_epoch == 0) {
    std::fprintf(stderr, "%s: epoch %lld done at step %lld/%lld, mean loss %.4f, %.1f steps/s\n",
                 label_.c_str(), static_cast<long long>(report.step / report.steps_per_epoch),
                 static_cast<long long>(report.step), static_cast<long long>(report.total_steps),
                 epoch_loss_sum_ / static_cast<double>(epoch_steps_),
                 static_cast<double>(report.step) / report.wall_seconds);
    epoch_loss_sum_ = 0;
    epoch_steps_ = 0;
  }
}

void ProgressDisplay::draw_bar(const StepReport& report) {
  const double done = static_cast<double>(report.step) / static_cast<double>(report.total_steps);
  const int filled = static_cast<int>(done * kBarWidth);
  const double rate = static_cast<double>(report.step) / report.wall_seconds;
  const double left = static_cast<double>(report.total_steps - report.step) / rate;
  std::fprintf(stderr, "\r%-16s [%s%s] %lld/%lld  loss %.4f  %.1f steps/s  ETA %s \x1b[K",
               label_.c_str(), std::string(filled, '#').c_str(),
               std::string(kBarWidth - filled, '.').c_str(), static_cast<long long>(report.step),
               static_cast<long long>(report.total_steps), smoothed_loss_, rate,
               minutes_seconds(left).c_str());
  std::fflush(stderr);
}

void ProgressDisplay::finish(const RunResult& result) {
  if (bar_) std::fprintf(stderr, "\r\x1b[K");  // clear the bar; the line below replaces it
  std::fprintf(stderr, "%s: %lld steps in %.1f s (%.2f ms/step), test accuracy %.2f%%\n",
               label_.c_str(), static_cast<long long>(result.steps), result.train_seconds,
               result.ms_per_step, 100.0 * result.test_accuracy);
}

}  // namespace mnist_mlp
