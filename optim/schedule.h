#pragma once
// Learning-rate schedules: the rate for a step, from the base rate. Steps count from 0.
//
//   optim::InverseSqrtSchedule schedule(1e-3, 4000);        // the Transformer's
//   for (int step = 0; ...; ++step) { optimizer.set_lr(schedule(step)); ... }

#include <cstdint>

namespace normgrad::optim {

// base, always.
struct ConstantSchedule {
  double base;
  double operator()(std::int64_t step) const;
};

// base * gamma^(step / step_size) (integer division): a drop by gamma every step_size steps.
struct StepSchedule {
  double base;
  std::int64_t step_size;
  double gamma = 0.1;
  double operator()(std::int64_t step) const;
};

// Linear warm-up to base over `warmup` steps, then decay as 1/sqrt(step):
//   base * min((step + 1) / warmup, sqrt(warmup / (step + 1)))
// This is the Transformer's schedule with its peak set to `base`.
struct InverseSqrtSchedule {
  double base;
  std::int64_t warmup;
  double operator()(std::int64_t step) const;
};

// Constant for the first `constant_steps`, then linear to zero at `total_steps`: the schedule of
// the paper's CIFAR model (lr = base * min(2 - epoch / 100, 1) over 200 epochs).
struct ConstantThenLinearDecaySchedule {
  double base;
  std::int64_t constant_steps;
  std::int64_t total_steps;
  double operator()(std::int64_t step) const;
};

}  // namespace normgrad::optim
