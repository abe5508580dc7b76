#pragma once
// A program's training state: the library's file (model, optimizer, generator and the steps
// done, io/training_state.h) with two entries of the program's own, so that a run continues
// exactly where it stopped and a file of another run is refused:
//
//   <program>.model     the model's description, checked before anything is loaded: two norms
//                       can have the same tensors (LayerNorm's and an RMSNorm with a bias)
//   <program>.history   the run's records as CSV (a validation or an epoch a line)
//
//   const examples::StateOwner owner{"attentive_reader", describe(model.config())};
//   examples::save_training_state(path, owner, model, adam, generator, steps, history_csv);
//   const examples::LoadedTrainingState loaded =
//       examples::load_training_state(path, owner, model, adam, generator);
//
// The file is written atomically (io::save_training_state), so a run stopped while writing it
// keeps the state before.

#include <normgrad/normgrad.h>

#include <cstdint>
#include <string>

namespace examples {

// Whose a training state is: the program, which names the keys and the errors
// ("attentive_reader"), and the model's settings in one line.
struct StateOwner {
  std::string program;
  std::string model_description;
};

// As io::save_training_state, with the owner's entries and the history beside.
void save_training_state(const std::string& path, const StateOwner& owner,
                         const normgrad::nn::Module& model,
                         const normgrad::optim::Optimizer& optimizer,
                         const normgrad::Generator& generator, std::int64_t steps,
                         const std::string& history_csv);

struct LoadedTrainingState {
  std::int64_t steps = 0;
  std::string history_csv;
};

// Restores model, optimizer and generator from `path` and returns the steps and history. An
// Error naming the file, before anything changes, when it is not a training state of
// `owner.program`, holds another model, or has no history.
LoadedTrainingState load_training_state(const std::string& path, const StateOwner& owner,
                                        normgrad::nn::Module& model,
                                        normgrad::optim::Optimizer& optimizer,
                                        normgrad::Generator& generator);

// A state of a run that validates every so many steps: an Error naming the file unless its last
// validation was at its last step and its steps are at most the run's `max_steps`.
void check_steps_done(const std::string& path, const std::string& program,
                      std::int64_t last_validation, std::int64_t steps, std::int64_t max_steps);

}  // namespace examples
