#include "progress.h"

#include <unistd.h>

#include <cmath>
#include <cstdio>

namespace convpool_cnn_c {

ProgressDisplay::ProgressDisplay(bool bar, std::int64_t total_steps)
    : bar_(bar), total_steps_(total_steps) {}

bool ProgressDisplay::stderr_is_terminal() { return ::isatty(STDERR_FILENO) == 1; }

void ProgressDisplay::update(const StepReport& report) {
  ++steps_;
  smoothed_loss_ = steps_ == 1 ? report.loss : 0.95 * smoothed_loss_ + 0.05 * report.loss;
  if (!bar_) return;
  const double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  // At most ten redraws a second, and always the epoch's last batch.
  if (elapsed - last_draw_ < 0.1 && report.batch != report.batches) return;
  last_draw_ = elapsed;
  constexpr int width = 30;
  const int filled =
      static_cast<int>(width * report.batch / std::max<std::int64_t>(1, report.batches));
  const std::string bar = std::string(static_cast<std::size_t>(filled), '=') +
                          std::string(static_cast<std::size_t>(width - filled), ' ');
  const double left = elapsed / static_cast<double>(steps_) *
                      static_cast<double>(std::max<std::int64_t>(0, total_steps_ - steps_));
  std::fprintf(stderr, "\r  epoch %lld/%lld [%s] %lld/%lld  loss %.4f  %s left   ",
               static_cast<long long>(report.epoch), static_cast<long long>(report.epochs),
               bar.c_str(), static_cast<long long>(report.batch),
               static_cast<long long>(report.batches), smoothed_loss_,
               format_duration(left).c_str());
  std::fflush(stderr);
}

void ProgressDisplay::clear() {
  if (bar_) std::fprintf(stderr, "\r%*s\r", 90, "");
}

}  // namespace convpool_cnn_c
