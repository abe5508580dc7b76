#pragma once
// A program's training state: its model, optimizer and generator (io::save_training_state),
// and beside them a line describing the model and the run's records as text (record_csv.h),
// under keys named for the program ("convpool_cnn_c.model", "convpool_cnn_c.history").
//
// Loading checks the description before anything changes: two norms can have the same tensors
// (LayerNorm's and an RMSNorm with a bias), and nothing may change when the state is not this
// model's.

#include <normgrad/normgrad.h>

#include <cstdint>
#include <string>

namespace examples {

struct RunState {
  normgrad::nn::Module& model;
  normgrad::optim::Optimizer& optimizer;
  normgrad::Generator& generator;
  std::string program;      // names the keys and the errors
  std::string description;  // of the model: a state that describes another is refused
};

void save_run_state(const std::string& path, const RunState& state, std::int64_t steps,
                    const std::string& history);

struct LoadedRunState {
  std::int64_t steps = 0;
  std::string history{};
};

// Restores the state's model, optimizer and generator from `path`. An Error naming the path
// when it is not this program's training state, holds another model or has no history.
LoadedRunState load_run_state(const std::string& path, const RunState& state);

}  // namespace examples
