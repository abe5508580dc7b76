#include "optim/schedule.h"

#include <algorithm>
#include <cmath>

#include "base/error.h"

namespace normgrad::optim {

namespace {
void check_step(std::int64_t step, const char* schedule) {
  NG_CHECK(step >= 0, schedule, "steps count from 0, got ", step);
}
}  // namespace

double ConstantSchedule::operator()(std::int64_t step) const {
  check_step(step, "ConstantSchedule");
  return base;
}

double StepSchedule::operator()(std::int64_t step) const {
  check_step(step, "StepSchedule");
  NG_CHECK(step_size > 0, "StepSchedule", "step_size must be positive, got ", step_size);
  return base * std::pow(gamma, static_cast<double>(step / step_size));
}

double InverseSqrtSchedule::operator()(std::int64_t step) const {
  check_step(step, "InverseSqrtSchedule");
  NG_CHECK(warmup > 0, "InverseSqrtSchedule", "warmup must be positive, got ", warmup);
  const double s = static_cast<double>(step + 1), w = static_cast<double>(warmup);
  return base * std::min(s / w, std::sqrt(w / s));
}

double ConstantThenLinearDecaySchedule::operator()(std::int64_t step) const {
  check_step(step, "ConstantThenLinearDecaySchedule");
  NG_CHECK(constant_steps >= 0 && total_steps > constant_steps, "ConstantThenLinearDecaySchedule",
           "needs 0 <= constant_steps < total_steps, got ", constant_steps, " and ", total_steps);
  if (step < constant_steps) return base;
  const double remaining =
      static_cast<double>(total_steps - step) / static_cast<double>(total_steps - constant_steps);
  return base * std::max(0.0, remaining);
}

}  // namespace normgrad::optim
