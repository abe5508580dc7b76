#include "common/training_state.h"

namespace examples {

namespace ng = normgrad;

namespace {

std::string model_key(const StateOwner& owner) { return owner.program + ".model"; }
std::string history_key(const StateOwner& owner) { return owner.program + ".history"; }

}  // namespace

void save_training_state(const std::string& path, const StateOwner& owner,
                         const ng::nn::Module& model, const ng::optim::Optimizer& optimizer,
                         const ng::Generator& generator, std::int64_t steps,
                         const std::string& history_csv) {
  ng::io::save_training_state(
      path, model, optimizer, generator, steps,
      {{history_key(owner), history_csv}, {model_key(owner), owner.model_description}});
}

LoadedTrainingState load_training_state(const std::string& path, const StateOwner& owner,
                                        ng::nn::Module& model, ng::optim::Optimizer& optimizer,
                                        ng::Generator& generator) {
  // The metadata alone first: nothing may change when the state is not this model's.
  ng::io::Metadata metadata;
  ng::io::load_tensors(path, &metadata);
  const auto description = metadata.find(model_key(owner));
  NG_CHECK(description != metadata.end(), owner.program, "'", path, "' is not a ", owner.program,
           " training state");
  NG_CHECK(description->second == owner.model_description, owner.program, "'", path,
           "' holds the model ", description->second, ", not this one: ", owner.model_description);
  LoadedTrainingState loaded;
  loaded.steps = ng::io::load_training_state(path, model, optimizer, generator, &metadata);
  const auto history = metadata.find(history_key(owner));
  NG_CHECK(history != metadata.end(), owner.program, "'", path, "' is a training state without ",
           owner.program, "'s history");
  loaded.history_csv = history->second;
  return loaded;
}

void check_steps_done(const std::string& path, const std::string& program,
                      std::int64_t last_validation, std::int64_t steps, std::int64_t max_steps) {
  NG_CHECK(last_validation > 0 && last_validation == steps, program, "'", path,
           "' records validations up to step ", last_validation, " but says ", steps,
           " steps were done");
  NG_CHECK(steps <= max_steps, program, "'", path, "' has ", steps,
           " steps done, more than --steps ", max_steps);
}

}  // namespace examples
