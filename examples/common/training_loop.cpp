#include "training_loop.h"

#include <normgrad/normgrad.h>

#include <chrono>

namespace examples {

namespace {

bool beats(double score, const std::optional<double>& best, Better better) {
  if (!best) return true;
  return better == Better::Lower ? score < *best : score > *best;
}

}  // namespace

LoopEnd run_training_loop(const LoopBudget& budget, LoopRecord& record,
                          const LoopCallbacks& model) {
  NG_CHECK(budget.steps >= 0 && budget.seconds >= 0 && budget.validate_every >= 0 &&
               budget.patience >= 0 && budget.save_every >= 0,
           "run_training_loop", "a budget's counts and seconds must be >= 0");
  LoopEnd end{.first_step = record.step, .stopped_because = "the step budget"};
  // A resumed run's state is on disk already; a new run always writes one.
  std::int64_t saved = record.step > 0 ? record.step : -1;
  const auto save = [&] {
    if (model.save_state) model.save_state(record);
    saved = record.step;
  };
  const auto start = std::chrono::steady_clock::now();
  while (record.step < budget.steps) {
    if (budget.seconds > 0) {
      const std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - start;
      bool out_of_time = elapsed.count() >= budget.seconds;
      if (model.agree_to_stop) out_of_time = model.agree_to_stop(out_of_time);
      if (out_of_time) {
        end.stopped_because = "the time budget";
        break;
      }
    }
    StepDone done{.loss = model.train_step()};
    done.step = ++record.step;
    const bool validate = (budget.validate_every > 0 && done.step % budget.validate_every == 0) ||
                          (budget.validate_at_end && done.step == budget.steps);
    bool stop_early = false;
    if (validate) {
      done.score = model.validate();
      done.new_best = beats(*done.score, record.best, model.better);
      if (done.new_best) {
        record.best = done.score;
        record.validations_without_best = 0;
      } else {
        ++record.validations_without_best;
        stop_early = budget.patience > 0 && record.validations_without_best >= budget.patience;
      }
    }
    if (model.after_step) model.after_step(done);
    if (stop_early) {
      end.stopped_because = "early stopping";
      break;
    }
    if (budget.save_every > 0 && done.step % budget.save_every == 0) save();
  }
  if (saved != record.step) save();
  end.last_step = record.step;
  return end;
}

}  // namespace examples
