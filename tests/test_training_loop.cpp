// examples/common/training_loop.h and progress.h: the loop and the progress line every example
// program trains with. A "model" here is a list of losses and validation scores, so that the
// loop's decisions (when to validate, which score is best, when to stop and save) can be read
// off plainly; a resumed loop must decide exactly as an uninterrupted one.

#include <sstream>

#include "common/progress.h"
#include "common/training_loop.h"
#include "helpers.h"

namespace {

// A model whose validation scores are given in advance, one per validation, and a log of what
// the loop did with it.
struct ScriptedModel {
  std::vector<double> scores{};
  std::size_t validations = 0;
  std::vector<std::int64_t> best_steps{}, saved_steps{};

  examples::LoopEnd run(const examples::LoopBudget& budget, examples::LoopRecord& record,
                        examples::Better better = examples::Better::Lower) {
    return examples::run_training_loop(budget, record, callbacks(better));
  }

  examples::LoopCallbacks callbacks(examples::Better better) {
    return {.train_step = [] { return 1.0; },
            .validate = [this] { return scores.at(validations++); },
            .better = better,
            .after_step =
                [this](const examples::StepDone& done) {
                  if (done.new_best) best_steps.push_back(done.step);
                },
            .save_state =
                [this](const examples::LoopRecord& record) { saved_steps.push_back(record.step); }};
  }
};

}  // namespace

TEST_CASE("training loop: validations at their interval, the best kept, states saved") {
  ScriptedModel model{.scores = {3.0, 2.0, 2.5, 1.0}};
  examples::LoopRecord record;
  const examples::LoopEnd end =
      model.run({.steps = 8, .validate_every = 2, .save_every = 3}, record);
  CHECK(end.first_step == 0);
  CHECK(end.last_step == 8);
  CHECK(end.stopped_because == "the step budget");
  CHECK(model.validations == 4);
  CHECK(model.best_steps == std::vector<std::int64_t>{2, 4, 8});
  CHECK(record.best == 1.0);
  CHECK(record.validations_without_best == 0);
  // Every third step, and the last.
  CHECK(model.saved_steps == std::vector<std::int64_t>{3, 6, 8});
}

TEST_CASE("training loop: a higher score is better where the program says so") {
  ScriptedModel model{.scores = {0.5, 0.4, 0.7}};
  examples::LoopRecord record;
  model.run({.steps = 3, .validate_every = 1}, record, examples::Better::Higher);
  CHECK(model.best_steps == std::vector<std::int64_t>{1, 3});
  CHECK(record.best == 0.7);
}

TEST_CASE(
    "training loop: early stopping, and a resumed run stops where an uninterrupted one "
    "does") {
  const std::vector<double> scores{5.0, 4.0, 4.5, 4.2, 3.0, 3.5, 3.6, 3.7};
  ScriptedModel whole{.scores = scores};
  examples::LoopRecord record;
  const examples::LoopEnd end =
      whole.run({.steps = 100, .validate_every = 1, .patience = 2}, record);
  CHECK(end.stopped_because == "early stopping");
  CHECK(end.last_step == 4);  // 4.5 and 4.2 did not beat 4.0

  // The same run stopped by its budget after 3 steps, then resumed from what its state kept.
  ScriptedModel first{.scores = scores};
  examples::LoopRecord kept;
  first.run({.steps = 3, .validate_every = 1, .patience = 2}, kept);
  CHECK(first.saved_steps == std::vector<std::int64_t>{3});
  CHECK(kept.validations_without_best == 1);
  ScriptedModel second{.scores = {4.2}};
  const examples::LoopEnd resumed =
      second.run({.steps = 100, .validate_every = 1, .patience = 2}, kept);
  CHECK(resumed.first_step == 3);
  CHECK(resumed.last_step == 4);
  CHECK(resumed.stopped_because == "early stopping");
  CHECK(second.saved_steps == std::vector<std::int64_t>{4});
}

TEST_CASE("training loop: a resumed run with nothing left to do saves nothing") {
  ScriptedModel model;
  examples::LoopRecord record{.step = 5};
  const examples::LoopEnd end = model.run({.steps = 5, .save_every = 1}, record);
  CHECK(end.last_step == 5);
  CHECK(model.saved_steps.empty());
  CHECK_ERROR(model.run({.steps = -1}, record), ">= 0");
}

TEST_CASE("progress line: plain lines after each epoch and at reports, notes on their own") {
  std::ostringstream out;
  examples::ProgressLine progress(
      {.out = &out, .label = "rmsnorm", .total_steps = 4, .steps_per_epoch = 2, .epochs = 2});
  progress.update(1, 1.0);
  progress.update(2, 3.0);
  progress.update(3, 0.5);
  progress.report("dev loss 0.250");
  progress.note("done\n");
  std::istringstream lines(out.str());
  std::string line;
  std::getline(lines, line);
  CHECK(line.rfind("rmsnorm: step 2/4  epoch 1/2  loss 2.0000  ", 0) == 0);
  CHECK(line.find(" steps/s  ") != std::string::npos);
  std::getline(lines, line);
  CHECK(line.rfind("rmsnorm: step 3/4  epoch 2/2  loss 0.5000  dev loss 0.250  ", 0) == 0);
  std::getline(lines, line);
  CHECK(line == "done");

  std::ostringstream terminal;
  examples::ProgressLine redrawn({.out = &terminal, .redraw = true, .total_steps = 2});
  redrawn.update(1, 1.0);
  redrawn.update(2, 1.0);  // the last step is always drawn
  redrawn.note("stopped\n");
  const std::string drawn = terminal.str();
  CHECK(drawn.rfind("\r[###############...............] step 1/2  loss 1.0000", 0) == 0);
  CHECK(drawn.find("\r[##############################] step 2/2") != std::string::npos);
  CHECK(drawn.size() > 10);
  CHECK(drawn.substr(drawn.size() - 12) == "\r\x1b[Kstopped\n");
}
