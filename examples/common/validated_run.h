#pragma once
// One training run in its model folder, as the programs that validate every so many steps
// (attentive_reader, order_embedding) run it for `train` and for each norm of `experiment`:
// the folder's training state loaded when it has one, then the rest of the run's steps on
// run_training_loop, a validation every valid_every steps and after the last, and after each
// validation model.safetensors (when its score is a new best), state.safetensors and
// train.csv. A progress line on stderr (with `progress_bar`), a line per validation on the log,
// and the best validation at the end.
//
// The program's Trainer brings the model and its data:
//   steps_done()        the steps its state has done
//   train_step()        one step on the next batch; returns its loss
//   validate()          validates, keeps the record in history() and returns it
//   history(), model(), save_state(path), load_state(path)
// and its `Validations` say how the records are scored, told and written.
//
//   examples::train_to_validations(folder, run.training, trainer, validations(),
//                                  {.label = run.model.norm, .data = "200 questions", .log =
//                                  stdout});

#include <normgrad/normgrad.h>

#include <cstdint>
#include <cstdio>
#include <functional>
#include <iostream>
#include <string>
#include <vector>

#include "common/progress.h"
#include "common/run_folder.h"
#include "common/step_training.h"
#include "common/training_loop.h"
#include "common/training_state.h"

namespace examples {

// How a program's validation records (each with .step, and .seconds: the training time so far)
// are scored, told and written.
template <class Record> struct Validations {
  std::function<double(const Record&)> score;  // what a new best must beat
  Better better = Better::Lower;
  // The record on its line, after "step 120/500  ": "loss 2.310  valid error 35.1% ...".
  std::function<std::string(const Record&)> text;
  // The best record, at the end of the run: "lowest validation error 33.70% at step 1750".
  std::function<std::string(const Record&)> best_text;
  // The records as train.csv and the training state keep them: a header, then a line each.
  std::function<std::string(const std::vector<Record>&)> csv;
};

// Whether `score` beats `than`.
inline bool beats(double score, double than, Better better) {
  return better == Better::Lower ? score < than : score > than;
}

// The first record of the best score, the one whose weights the run keeps.
template <class Record>
const Record& best_record(const std::vector<Record>& history, const Validations<Record>& v) {
  const Record* best = &history.front();
  for (const Record& r : history)
    if (beats(v.score(r), v.score(*best), v.better)) best = &r;
  return *best;
}

// The checks of load_validated_state: `last_record` the step of the last record (0: none).
void check_validated_state(const std::string& path, const std::string& program, std::int64_t steps,
                           std::int64_t last_record, std::int64_t max_steps);

// A training state's steps and records, the records read by `parse` and checked against the
// steps and the run's budget of `max_steps`: an Error naming `path` when they disagree.
template <class Record> struct ValidatedState {
  std::int64_t steps = 0;
  std::vector<Record> history;
};
template <class Record>
ValidatedState<Record> load_validated_state(
    const std::string& path, const RunState& state, std::int64_t max_steps,
    const std::function<std::vector<Record>(const std::string&)>& parse) {
  const LoadedRunState loaded = load_run_state(path, state);
  ValidatedState<Record> result{.steps = loaded.steps, .history = parse(loaded.history)};
  check_validated_state(path, state.program, loaded.steps,
                        result.history.empty() ? 0 : result.history.back().step, max_steps);
  return result;
}

// What the loop keeps of a run that has done `steps` with these records: the best score and the
// validations since it, where the uninterrupted run would have them.
template <class Record>
LoopRecord resumed_loop_record(std::int64_t steps, const std::vector<Record>& history,
                               const Validations<Record>& v) {
  LoopRecord record{.step = steps};
  for (const Record& r : history) {
    const double score = v.score(r);
    if (!record.best || beats(score, *record.best, v.better)) {
      record.best = score;
      record.validations_without_best = 0;
    } else {
      ++record.validations_without_best;
    }
  }
  return record;
}

// The lines of a run: its label (its norm) and what it trains on ("200 training questions").
struct RunLines {
  std::string label;
  std::string data;
  bool progress_bar = false;  // the progress line on stderr
  std::FILE* log = nullptr;   // a line per validation, and the run's first and last
};

// The parameters a model trains.
std::int64_t count_parameters(const normgrad::nn::Module& model);

template <class Trainer, class Record>
void train_to_validations(const RunFolder& folder, const StepTraining& training, Trainer& trainer,
                          const Validations<Record>& validations, const RunLines& lines) {
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
                 static_cast<long long>(training.steps), validations.text(r).c_str(),
                 done.new_best ? " *" : "", r.seconds);
    std::fflush(lines.log);
  };
  const auto save_state = [&](const LoopRecord&) {
    trainer.save_state(folder.file("state.safetensors"));
    folder.write_text("train.csv", validations.csv(trainer.history()));
  };
  LoopRecord record = resumed_loop_record(trainer.steps_done(), trainer.history(), validations);
  run_training_loop({.steps = training.steps,
                     .validate_every = training.valid_every,
                     .validate_at_end = true,
                     .save_every = training.valid_every},
                    record,
                    {.train_step = [&] { return trainer.train_step(); },
                     .validate = [&] { return validations.score(trainer.validate()); },
                     .better = validations.better,
                     .after_step = after_step,
                     .save_state = save_state});
  std::fprintf(lines.log, "%s: %s; model folder %s\n", lines.label.c_str(),
               validations.best_text(best_record(trainer.history(), validations)).c_str(),
               folder.path().c_str());
}

}  // namespace examples
