#pragma once
// The training loop the programs share: steps until a budget of steps or of seconds is spent;
// a validation every so many steps by whatever score the program measures; the best score
// kept, each new best announced (so that the program can keep those weights); early stopping
// after so many validations without a new best; a training state at an interval and at the
// end. The program brings the model as callbacks, and decides what a step is: one batch, or
// a whole epoch.
//
// A resumed run passes the LoopRecord its training state kept: the loop then continues from
// that step, with that best and that count of validations without one, exactly where an
// uninterrupted run would be.

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

namespace examples {

struct LoopBudget {
  std::int64_t steps = 0;           // the step the run ends at
  double seconds = 0;               // this process's training time; 0: no limit
  std::int64_t validate_every = 0;  // steps between validations; 0: none at an interval
  bool validate_at_end = false;     // a validation after the budget's last step too
  std::int64_t patience = 0;        // validations without a new best before stopping; 0: never
  std::int64_t save_every = 0;      // steps between training states; 0: at the end alone
};

// Which way a validation score improves: a loss or an error is lower, BLEU or an accuracy higher.
enum class Better { Lower, Higher };

// What the loop itself keeps across a resume.
struct LoopRecord {
  std::int64_t step = 0;         // steps done
  std::optional<double> best{};  // the best validation score; none before the first validation
  std::int64_t validations_without_best = 0;
};

// What the program hears after each step.
struct StepDone {
  std::int64_t step = 0;          // steps done, this one included
  double loss = 0;                // what train_step returned
  std::optional<double> score{};  // the validation score, after a step that validated
  bool new_best = false;          // the score beat every earlier one
};

struct LoopCallbacks {
  std::function<double()> train_step{};  // one step; returns its loss
  std::function<double()> validate{};    // a score of the model as it is now
  Better better = Better::Lower;
  // After every step and its validation, before a training state: logs, progress, best weights.
  std::function<void(const StepDone&)> after_step{};
  // A training state with the record it must keep. Called after the last step, unless the run
  // took no step and already has one; a new run gets one even then.
  std::function<void(const LoopRecord&)> save_state{};
  // With a time budget, before every step: whether to stop, given whether this process is out
  // of time. In data-parallel training every rank must answer the same (a sum over ranks);
  // without it, this process's own clock decides.
  std::function<bool(bool out_of_time)> agree_to_stop{};
};

struct LoopEnd {
  std::int64_t first_step = 0;  // the step this process started after
  std::int64_t last_step = 0;
  std::string stopped_because{};  // "the step budget", "the time budget", "early stopping"
};

// Runs `model` from `record` (all zero for a new run) until the budget says stop; `record`
// ends as the last training state keeps it. A budget with a negative count throws
// normgrad::Error.
LoopEnd run_training_loop(const LoopBudget& budget, LoopRecord& record, const LoopCallbacks& model);

}  // namespace examples
