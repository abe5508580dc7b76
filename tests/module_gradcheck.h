#pragma once
// Gradient checks through a module's own parameters, with the one gradcheck of autograd/.
//
// gradcheck differentiates with respect to fresh leaves it makes from its inputs, while a
// module reads its parameters through its Tensor members. So the checked function puts the
// leaves in place of those members (Tensor is a handle: assigning one rebinds the member),
// runs the forward pass, and puts the registered parameters back. The test lists the members;
// CHECK_MODULE_GRADIENTS insists that the list is exactly the module's parameters, so a
// parameter the list forgets cannot pass unchecked.

#include <functional>
#include <vector>

#include "helpers.h"

namespace testing {

using ParameterSlots = std::vector<normgrad::Tensor*>;

// The slots of a normaliser's gain and bias, those it has.
inline void add_norm_slots(ParameterSlots& slots, normgrad::nn::Norm& norm) {
  const auto add = [&slots](normgrad::Tensor& gain, normgrad::Tensor& bias) {
    if (gain.defined()) slots.push_back(&gain);
    if (bias.defined()) slots.push_back(&bias);
  };
  if (auto* affine = dynamic_cast<normgrad::nn::AffineNorm*>(&norm))
    add(affine->gain, affine->bias);
  if (auto* batch = dynamic_cast<normgrad::nn::BatchNorm*>(&norm)) add(batch->gain, batch->bias);
}

// True when `slots` holds every parameter of `module` once, and nothing else.
inline bool covers_parameters(const normgrad::nn::Module& module, const ParameterSlots& slots) {
  const std::vector<normgrad::Tensor> parameters = module.parameters();
  if (parameters.size() != slots.size()) return false;
  for (const normgrad::Tensor& parameter : parameters) {
    int found = 0;
    for (const normgrad::Tensor* slot : slots) found += slot->is_same(parameter) ? 1 : 0;
    if (found != 1) return false;
  }
  return true;
}

// gradcheck over `inputs` followed by the parameters in `slots`; `forward` sees the inputs'
// leaves and reads the parameters' leaves through the module.
inline normgrad::GradcheckResult module_gradcheck(
    const ParameterSlots& slots,
    const std::function<normgrad::Tensor(const std::vector<normgrad::Tensor>&)>& forward,
    std::vector<normgrad::Tensor> inputs, normgrad::GradcheckOptions options = {}) {
  const std::size_t first_parameter = inputs.size();
  for (normgrad::Tensor* slot : slots) inputs.push_back(*slot);
  const auto swapped = [&](const std::vector<normgrad::Tensor>& leaves) {
    std::vector<normgrad::Tensor> registered;
    for (std::size_t i = 0; i < slots.size(); ++i) {
      registered.push_back(*slots[i]);
      *slots[i] = leaves[first_parameter + i];
    }
    const std::vector<normgrad::Tensor> own_inputs(leaves.begin(),
                                                   leaves.begin() + first_parameter);
    normgrad::Tensor output;
    try {
      output = forward(own_inputs);
    } catch (...) {
      for (std::size_t i = 0; i < slots.size(); ++i) *slots[i] = registered[i];
      throw;
    }
    for (std::size_t i = 0; i < slots.size(); ++i) *slots[i] = registered[i];
    return output;
  };
  return normgrad::gradcheck(swapped, inputs, options);
}

}  // namespace testing

// Passes when `slots` are exactly the module's parameters and the gradient check passes.
#define CHECK_MODULE_GRADIENTS(module, slots, forward, ...)                                        \
  do {                                                                                             \
    CHECK(::testing::covers_parameters(module, slots));                                            \
    const auto module_gradcheck_result = ::testing::module_gradcheck(slots, forward, __VA_ARGS__); \
    INFO(module_gradcheck_result.message);                                                         \
    CHECK(module_gradcheck_result.ok);                                                             \
  } while (false)
