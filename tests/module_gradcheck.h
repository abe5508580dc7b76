#pragma once
// Gradient checks through a module's own parameters, with the one gradcheck of autograd/.
//
// gradcheck differentiates with respect to fresh leaves it makes from its inputs, while a
// module reads its parameters through its Tensor members. So the checked function puts the
// leaves in place of those members (Tensor is a handle: assigning one rebinds the member),
// runs the forward pass, and puts the registered parameters back. The test lists the members;
// CHECK_MODULE_GRADIENTS insists that the list is exactly the module's parameters, so a
// parameter the list forgets cannot pass unchecked.
//
// CHECK_PARAMETER_GRADIENTS needs no list: it perturbs every registered parameter in place and
// compares with one backward pass. It suits layers whose parameters sit deep in children
// (a recurrent layer's cells and their norms), where listing member slots would be long. Under
// AddressSanitizer it perturbs 4 entries of each parameter, evenly spaced and the last among
// them: every parameter's gradient path still runs, in a fraction of the time (the whole
// models' checks took up to a minute each there); the plain build checks every entry.

#include <algorithm>
#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "helpers.h"
#include "sanitizer.h"

namespace testing {

using ParameterSlots = std::vector<normgrad::Tensor*>;

// Moves a module's parameters away from their initial values, so that no bias sits at zero
// and no gain at one by construction, and tanh and softmax work in their curved range:
// gains (of norms or WeightNorm, named "...gain") in [0.5, 1.5], everything else N(0, 0.5^2).
inline void randomise(normgrad::nn::Module& module, std::uint64_t seed) {
  normgrad::Generator generator(seed);
  for (auto& [name, parameter] : module.named_parameters()) {
    const bool gain = name.size() >= 4 && name.compare(name.size() - 4, 4, "gain") == 0;
    if (gain)
      normgrad::nn::init::uniform_(parameter, 0.5, 1.5, generator);
    else
      normgrad::nn::init::normal_(parameter, 0.0, 0.5, generator);
  }
}

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

// Checks the gradients that one backward pass gives every parameter of `module` (all float64)
// against central differences, for L = sum(v * forward()) with a fixed random v: the module
// form of gradcheck, which perturbs the parameters in place. `entries` > 0 checks that many of
// each parameter's entries, evenly spaced (always the last), 0 every entry. Returns "" when all
// agree, else the first mismatch.
template <typename Forward>
std::string parameter_gradient_mismatch(normgrad::nn::Module& module, Forward&& forward,
                                        std::int64_t entries = 0, double eps = 1e-6,
                                        double rtol = 1e-4, double atol = 1e-6) {
  const Tensor first = forward();
  Generator generator(7);
  const Tensor v = randn(first.shape(), generator, {.dtype = DType::Float64});
  module.zero_grad();
  (first * v).sum().backward();
  const auto loss = [&] {
    NoGradGuard no_grad;
    return (forward() * v).sum().item();
  };
  for (const auto& entry : module.named_parameters()) {
    const std::string& name = entry.first;
    const Tensor& parameter = entry.second;
    if (parameter.dtype() != DType::Float64 || !parameter.is_contiguous())
      return name + " is not a contiguous float64 parameter";
    const std::vector<double> analytic = parameter.grad().defined()
                                             ? parameter.grad().to_vector<double>()
                                             : std::vector<double>(parameter.numel(), 0.0);
    double* values = parameter.data_ptr<double>();
    const std::int64_t n = parameter.numel();
    const std::int64_t stride = entries > 0 ? std::max<std::int64_t>(1, n / entries) : 1;
    for (std::int64_t i = (n - 1) % stride; i < n; i += stride) {
      const double saved = values[i];
      const double h = eps * std::max(1.0, std::fabs(saved));
      values[i] = saved + h;
      const double plus = loss();
      values[i] = saved - h;
      const double minus = loss();
      values[i] = saved;
      const double numeric = (plus - minus) / (2 * h);
      if (!(std::fabs(analytic[i] - numeric) <= atol + rtol * std::fabs(numeric)))
        return name + "[" + std::to_string(i) + "]: analytic " + std::to_string(analytic[i]) +
               ", numeric " + std::to_string(numeric);
    }
  }
  return "";
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

// Passes when testing::parameter_gradient_mismatch finds none.
#define CHECK_PARAMETER_GRADIENTS(module, forward)                                 \
  do {                                                                             \
    const std::string parameter_mismatch = ::testing::parameter_gradient_mismatch( \
        module, forward, ::testing::under_address_sanitizer ? 4 : 0);              \
    INFO("parameter gradients: " << parameter_mismatch);                           \
    CHECK(parameter_mismatch.empty());                                             \
  } while (false)
