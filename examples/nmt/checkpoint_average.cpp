#include "checkpoint_average.h"

namespace nmt {

namespace ng = normgrad;

namespace {

const std::string model_prefix = "model.";

// The model's tensors of one training state, by their names in the model.
ng::nn::StateDict model_tensors(const std::string& path, const std::string& program) {
  ng::nn::StateDict model;
  for (auto& [name, tensor] : ng::io::load_tensors(path))
    if (name.rfind(model_prefix, 0) == 0) model.emplace(name.substr(model_prefix.size()), tensor);
  NG_CHECK(!model.empty(), program, path, " holds no model weights (not a training state)");
  return model;
}

}  // namespace

ng::nn::StateDict average_model_weights(const std::vector<std::string>& training_states,
                                        const std::string& program) {
  NG_CHECK(!training_states.empty(), program, "no checkpoints to average");
  const ng::nn::StateDict first = model_tensors(training_states.front(), program);
  ng::nn::StateDict sums;
  for (const auto& [name, tensor] : first)
    sums[name] = ng::is_floating(tensor.dtype()) ? tensor.to(ng::DType::Float64) : tensor;
  for (std::size_t i = 1; i < training_states.size(); ++i) {
    const std::string& path = training_states[i];
    const ng::nn::StateDict next = model_tensors(path, program);
    NG_CHECK(next.size() == first.size(), program, path, " holds ", next.size(),
             " model tensors but ", training_states.front(), " holds ", first.size());
    for (const auto& [name, tensor] : next) {
      const auto found = first.find(name);
      NG_CHECK(found != first.end(), program, path, " holds '", name, "', which ",
               training_states.front(), " does not");
      const ng::Tensor& reference = found->second;
      NG_CHECK(tensor.shape() == reference.shape() && tensor.dtype() == reference.dtype(), program,
               path, ": '", name, "' is ", tensor.shape(), " ", tensor.dtype(), " but ",
               reference.shape(), " ", reference.dtype(), " in ", training_states.front());
      if (ng::is_floating(tensor.dtype())) {
        sums[name] = ng::add(sums[name], tensor.to(ng::DType::Float64));
      } else {
        NG_CHECK(tensor.to_vector<std::int64_t>() == reference.to_vector<std::int64_t>(), program,
                 path, ": the integer tensor '", name, "' differs from ", training_states.front(),
                 "'s; it cannot be averaged");
      }
    }
  }
  const auto count = static_cast<double>(training_states.size());
  ng::nn::StateDict mean;
  for (const auto& [name, sum] : sums) {
    const ng::DType dtype = first.at(name).dtype();
    mean[name] = ng::is_floating(dtype) ? ng::div(sum, count).to(dtype) : sum;
  }
  return mean;
}

}  // namespace nmt
