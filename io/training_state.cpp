#include "io/training_state.h"

#include <bit>
#include <string>
#include <vector>

#include "base/error.h"
#include "io/checkpoint.h"

namespace normgrad::io {

namespace {

const std::string model_prefix = "model.", optimizer_prefix = "optimizer.";

// The entries of `state` under `prefix`, with the prefix removed.
nn::StateDict with_prefix_removed(const nn::StateDict& state, const std::string& prefix) {
  nn::StateDict part;
  for (const auto& [name, tensor] : state)
    if (name.rfind(prefix, 0) == 0) part[name.substr(prefix.size())] = tensor;
  return part;
}

}  // namespace

void save_training_state(const std::string& path, const nn::Module& model,
                         const optim::Optimizer& optimizer, const Generator& generator,
                         std::int64_t step, const Metadata& metadata) {
  NG_CHECK(metadata.count("content") == 0, "save_training_state",
           "the metadata key \"content\" is the format's own");
  nn::StateDict state;
  for (const auto& [name, tensor] : model.state_dict()) state[model_prefix + name] = tensor;
  for (const auto& [name, tensor] : optimizer.state_dict()) state[optimizer_prefix + name] = tensor;
  // (seed, offset) are unsigned; their bits travel as int64.
  state["rng"] =
      from_vector(std::vector<std::int64_t>{std::bit_cast<std::int64_t>(generator.seed()),
                                            std::bit_cast<std::int64_t>(generator.offset())},
                  {2});
  state["step"] = from_vector(std::vector<std::int64_t>{step}, {});
  Metadata all_metadata = metadata;
  all_metadata["content"] = "normgrad training state";
  save_tensors(state, path, all_metadata);
}

std::int64_t load_training_state(const std::string& path, nn::Module& model,
                                 optim::Optimizer& optimizer, Generator& generator,
                                 Metadata* metadata) {
  Metadata stored;
  const nn::StateDict state = load_tensors(path, &stored);
  for (const char* key : {"rng", "step"})
    NG_CHECK(state.count(key) && state.at(key).dtype() == DType::Int64, "load_training_state", "'",
             path, "' has no int64 \"", key, "\" entry: is it a training state?");
  NG_CHECK(state.at("rng").shape() == Shape{2} && state.at("step").numel() == 1,
           "load_training_state", "'", path, "': \"rng\" must be [2] and \"step\" one value");
  for (const auto& [name, tensor] : state)
    NG_CHECK(name == "rng" || name == "step" || name.rfind(model_prefix, 0) == 0 ||
                 name.rfind(optimizer_prefix, 0) == 0,
             "load_training_state", "'", path, "': unexpected entry \"", name, "\"");
  // The optimizer checks its part before changing; if the model then refuses its part, the
  // optimizer's previous state is put back, so nothing changes unless everything fits.
  const nn::StateDict previous = optimizer.state_dict();
  try {
    optimizer.load_state_dict(with_prefix_removed(state, optimizer_prefix));
  } catch (const Error& error) {
    NG_CHECK(false, "load_training_state", "'", path, "': ", error.what());
  }
  try {
    model.load_state_dict(with_prefix_removed(state, model_prefix), /*strict=*/true);
  } catch (const Error& error) {
    optimizer.load_state_dict(previous);
    NG_CHECK(false, "load_training_state", "'", path, "': ", error.what());
  }
  const std::vector<std::int64_t> rng = state.at("rng").to_vector<std::int64_t>();
  generator.manual_seed(std::bit_cast<std::uint64_t>(rng[0]));
  generator.set_offset(std::bit_cast<std::uint64_t>(rng[1]));
  if (metadata != nullptr) {
    stored.erase("content");
    *metadata = std::move(stored);
  }
  return state.at("step").item<std::int64_t>();
}

}  // namespace normgrad::io
