#pragma once
// A run of steps of batches with a validation every so many steps, in its model folder, as
// attentive_reader and order_embedding train for `train` and for each norm of `experiment`:
// the folder's training state loaded when it has one, the rest of the steps on
// run_training_loop, a validation every valid_every steps and after the last, each followed by
// model.safetensors (on a new best score), state.safetensors and train.csv; a progress line,
// and a line per validation on the log.
//
// The program's Trainer has steps_done(), train_step() (a step on the next batch: its loss),
// validate() (a record, kept in history()), history(), model(), save_state(path) and
// load_state(path); its records say how they score and read.

#include <normgrad/normgrad.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <iostream>
#include <string>
#include <type_traits>
#include <vector>

#include "common/model_size.h"
#include "common/progress.h"
#include "common/run_folder.h"
#include "common/step_profile.h"
#include "common/training_loop.h"
#include "common/training_state.h"

namespace examples {

// The training settings, keyed in config.json as for_each_training_setting says. Each program
// keeps its paper's as kPaperTraining, and clips as its paper does.
struct StepTraining {
  std::int64_t steps = 0;  // the run ends after this step
  std::int64_t batch_size = 0;
  double learning_rate = 1e-3;   // Adam's
  double clip = 0;               // the gradients' largest norm; 0: no clipping
  std::int64_t valid_every = 0;  // steps between validations; the last step validates too
  std::uint64_t seed = 1;        // the batches
};

// visit("training", key, member) for each setting, for a program's for_each_setting.
template <class Training, class Visit>
void for_each_training_setting(Training& t, const Visit& visit) {
  visit("training", "steps", t.steps);
  visit("training", "batch_size", t.batch_size);
  visit("training", "learning_rate", t.learning_rate);
  visit("training", "clip", t.clip);
  visit("training", "valid_every", t.valid_every);
  visit("training", "seed", t.seed);
}

// An Error from `program` naming the first setting, by its flag, that cannot work (the batch is
// the program's to check, against its data).
void check_step_training(const StepTraining& training, const std::string& program);

// The training steps since the last validation, which its record sums up.
struct StepsSinceValidation {
  std::int64_t steps = 0;
  double seconds = 0, loss_sum = 0;

  // Counts a step that began at `start` and has just ended, and its loss.
  void add(double loss, std::chrono::steady_clock::time_point start) {
    ++steps;
    seconds += seconds_since(start);
    loss_sum += loss;
  }
  double mean_loss() const { return loss_sum / static_cast<double>(steps); }
};

// A program's validation record has .step, .seconds (the training time so far), and says how it
// scores and reads: score() and Record::better (which way a score improves), text() for its
// line ("loss 2.310  valid error 35.1%") and best_text() for the run's last ("lowest validation
// error 33.70% at step 1750"). The program's history_csv(records) writes them as train.csv.

// The first record of the best score: the one whose weights the run keeps.
template <class Record> const Record& best_record(const std::vector<Record>& history) {
  const Record* best = &history.front();
  for (const Record& r : history)
    if (Record::better == Better::Lower ? r.score() < best->score() : r.score() > best->score())
      best = &r;
  return *best;
}

// An Error naming the training state `path` unless its records end at its `steps`, and those
// are no more than the run's `max_steps`.
template <class Record>
void check_validated_state(const std::string& path, const std::string& program, std::int64_t steps,
                           const std::vector<Record>& history, std::int64_t max_steps) {
  const std::int64_t last = history.empty() ? 0 : history.back().step;
  NG_CHECK(last > 0 && last == steps, program, "'", path, "' records validations up to step ", last,
           " but says ", steps, " steps were done");
  NG_CHECK(steps <= max_steps, program, "'", path, "' has ", steps,
           " steps done, more than --steps ", max_steps);
}

// The run's lines: its label (its norm) and data ("200 training questions") on the first.
struct RunLines {
  std::string label, data;
  bool progress_bar = false;  // on stderr
  std::FILE* log = nullptr;
  ProfileFlags profile{};  // steps to profile (--profile)
};

template <class Trainer>
void train_to_validations(const RunFolder& folder, const StepTraining& training, Trainer& trainer,
                          const RunLines& lines) {
  using Record = typename std::decay_t<decltype(trainer.history())>::value_type;
  if (folder.has("state.safetensors")) {
    trainer.load_state(folder.file("state.safetensors"));
    std::fprintf(stderr, "%s: continuing '%s' after step %lld of %lld\n", folder.program().c_str(),
                 folder.path().c_str(), static_cast<long long>(trainer.steps_done()),
                 static_cast<long long>(training.steps));
  }
  std::fprintf(lines.log, "%s: %lld parameters, %s\n", lines.label.c_str(),
               static_cast<long long>(count_parameters(trainer.model())), lines.data.c_str());
  ProgressLine progress({.out = lines.progress_bar ? &std::cerr : nullptr,
                         .redraw = true,
                         .total_steps = training.steps});
  const auto after_step = [&](const StepDone& done) {
    progress.update(done.step, done.loss);
    if (!done.score) return;
    const Record& r = trainer.history().back();
    if (done.new_best) normgrad::io::save(trainer.model(), folder.file("model.safetensors"));
    progress.clear();
    std::fprintf(lines.log, "step %6lld/%lld  %s%s  %.0f s\n", static_cast<long long>(r.step),
                 static_cast<long long>(training.steps), r.text().c_str(),
                 done.new_best ? " *" : "", r.seconds);
    std::fflush(lines.log);
  };
  const auto save_state = [&](const LoopRecord&) {
    trainer.save_state(folder.file("state.safetensors"));
    folder.write_text("train.csv", history_csv(trainer.history()));
  };
  // A resumed run's best so far is its records'; without patience, the validations since it
  // do not matter.
  LoopRecord record{.step = trainer.steps_done()};
  if (!trainer.history().empty()) record.best = best_record(trainer.history()).score();
  StepProfile step_profile(lines.profile, trainer.model(), folder.program());
  run_training_loop({.steps = training.steps,
                     .validate_every = training.valid_every,
                     .validate_at_end = true,
                     .save_every = training.valid_every},
                    record,
                    {.train_step = step_profile.around([&] { return trainer.train_step(); }),
                     .validate = [&] { return trainer.validate().score(); },
                     .better = Record::better,
                     .after_step = after_step,
                     .save_state = save_state});
  std::fprintf(lines.log, "%s: %s; model folder %s\n", lines.label.c_str(),
               best_record(trainer.history()).best_text().c_str(), folder.path().c_str());
}

}  // namespace examples
