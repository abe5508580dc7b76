#include "training_state.h"

namespace examples {

namespace ng = normgrad;

void save_run_state(const std::string& path, const RunState& state, std::int64_t steps,
                    const std::string& history) {
  ng::io::save_training_state(
      path, state.model, state.optimizer, state.generator, steps,
      {{state.program + ".history", history}, {state.program + ".model", state.description}});
}

LoadedRunState load_run_state(const std::string& path, const RunState& state) {
  const std::string& program = state.program;
  ng::io::Metadata metadata;
  ng::io::load_tensors(path, &metadata);
  const auto model = metadata.find(program + ".model");
  NG_CHECK(model != metadata.end(), program, "'", path, "' is not a training state of ", program);
  NG_CHECK(model->second == state.description, program, "'", path, "' holds the model ",
           model->second, ", not this one: ", state.description);
  LoadedRunState loaded;
  loaded.steps =
      ng::io::load_training_state(path, state.model, state.optimizer, state.generator, &metadata);
  const auto history = metadata.find(program + ".history");
  NG_CHECK(history != metadata.end(), program, "'", path, "' is a training state without ", program,
           "'s history");
  loaded.history = history->second;
  return loaded;
}

}  // namespace examples
