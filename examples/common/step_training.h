#pragma once
// The training settings of the programs whose runs are steps of batches with a validation
// every so many steps (attentive_reader, order_embedding): the budget of steps, the batch,
// Adam's learning rate, the clipping, the validations' interval and the seed, with their
// config.json names and their checks written once. Each program keeps its paper's values as a
// constant of this type (kPaperTraining), and clips as its paper does: one global norm, or
// each gradient on its own.
//
//   const examples::StepTraining training{.steps = 2000, .batch_size = 32, .learning_rate = 2e-3,
//                                         .clip = 10, .valid_every = 250, .seed = 1};
//   examples::check_step_training(training, "attentive_reader");

#include <chrono>
#include <cstdint>
#include <string>

namespace examples {

struct StepTraining {
  std::int64_t steps = 0;  // the run ends after this step
  std::int64_t batch_size = 0;
  double learning_rate = 1e-3;   // Adam's
  double clip = 0;               // the gradients' largest norm; 0: no clipping
  std::int64_t valid_every = 0;  // steps between validations; the last step validates too
  std::uint64_t seed = 1;        // the batches
};

// Calls visit("training", key, member) for every setting, keyed as config.json has them, for a
// program's for_each_setting (run_folder.h). `Training`: StepTraining, or const StepTraining.
template <class Training, class Visit>
void for_each_training_setting(Training& t, const Visit& visit) {
  visit("training", "steps", t.steps);
  visit("training", "batch_size", t.batch_size);
  visit("training", "learning_rate", t.learning_rate);
  visit("training", "clip", t.clip);
  visit("training", "valid_every", t.valid_every);
  visit("training", "seed", t.seed);
}

// An Error from `program` naming the first setting that cannot work, by its flag. The batch is
// the program's to check, against its data.
void check_step_training(const StepTraining& training, const std::string& program);

// The training steps since the last validation, which its record sums up.
struct StepsSinceValidation {
  std::int64_t steps = 0;
  double seconds = 0;  // their training time
  double loss_sum = 0;

  // Counts a step that began at `start` and has just ended, and its loss.
  void add(double loss, std::chrono::steady_clock::time_point start) {
    ++steps;
    seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    loss_sum += loss;
  }
  double mean_loss() const { return loss_sum / static_cast<double>(steps); }
};

}  // namespace examples
