#pragma once
// Helpers shared by the test files: building float64 leaves, comparing tensors, and
// checking that an error names the operation and the offending values.

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include <normgrad/normgrad.h>

namespace testing {

using namespace normgrad;

// A float64 leaf of the given shape with values from a fixed seed, for gradient checks.
inline Tensor leaf(const Shape& shape, std::uint64_t seed = 1, double scale = 1.0) {
  Generator generator(seed);
  return (randn(shape, generator, {.dtype = DType::Float64}) * scale).detach().requires_grad_();
}

// Positive values away from zero (for log, sqrt, division, pow).
inline Tensor positive_leaf(const Shape& shape, std::uint64_t seed = 1) {
  Generator generator(seed);
  return (rand(shape, generator, {.dtype = DType::Float64}) + 0.5).detach().requires_grad_();
}

// True when every element agrees within atol + rtol * |expected|.
inline bool all_close(const Tensor& actual, const std::vector<double>& expected,
                      double rtol = 1e-6, double atol = 1e-8) {
  const std::vector<double> values = actual.to_vector<double>();
  if (values.size() != expected.size()) return false;
  for (std::size_t i = 0; i < values.size(); ++i) {
    const bool both_nan = std::isnan(values[i]) && std::isnan(expected[i]);
    if (!both_nan && !(std::fabs(values[i] - expected[i]) <= atol + rtol * std::fabs(expected[i])))
      return false;
  }
  return true;
}

inline bool all_close(const Tensor& actual, const Tensor& expected, double rtol = 1e-6,
                      double atol = 1e-8) {
  return actual.shape() == expected.shape() &&
         all_close(actual, expected.to_vector<double>(), rtol, atol);
}

// The message of the normgrad::Error that `body` throws, or "" if it throws none.
template <typename Body>
std::string error_of(Body&& body) {
  try {
    body();
  } catch (const normgrad::Error& error) {
    return error.what();
  }
  return "";
}

// Checks the gradients that one backward pass gives every parameter of `module` (all float64)
// against central differences, for L = sum(v * forward()) with a fixed random v: the module
// form of gradcheck, which perturbs the parameters in place. Returns "" when all agree, else
// the first mismatch.
template <typename Forward>
std::string module_gradient_mismatch(normgrad::nn::Module& module, Forward&& forward,
                                     double eps = 1e-6, double rtol = 1e-4, double atol = 1e-6) {
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
    const std::vector<double> analytic =
        parameter.grad().defined() ? parameter.grad().to_vector<double>()
                                   : std::vector<double>(parameter.numel(), 0.0);
    double* values = parameter.data_ptr<double>();
    for (std::int64_t i = 0; i < parameter.numel(); ++i) {
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

// Passes when the gradient check passes; on failure, prints the worst mismatch.
#define CHECK_GRADIENTS(function, ...)                                             \
  do {                                                                             \
    const auto gradcheck_result = ::normgrad::gradcheck(function, __VA_ARGS__);    \
    INFO(gradcheck_result.message);                                                \
    CHECK(gradcheck_result.ok);                                                    \
  } while (false)

// Checks that `expression` throws normgrad::Error whose message contains every fragment.
// Passes when testing::module_gradient_mismatch finds none.
#define CHECK_MODULE_GRADIENTS(module, forward)                                    \
  do {                                                                             \
    const std::string module_mismatch = ::testing::module_gradient_mismatch(module, forward); \
    INFO("module gradients: " << module_mismatch);                                 \
    CHECK(module_mismatch.empty());                                                \
  } while (false)

#define CHECK_ERROR(expression, ...)                                               \
  do {                                                                             \
    const std::string error_message = ::testing::error_of([&] { (void)(expression); }); \
    INFO("message: " << error_message);                                            \
    CHECK_FALSE(error_message.empty());                                            \
    for (const char* fragment : {__VA_ARGS__})                                     \
      CHECK(error_message.find(fragment) != std::string::npos);                    \
  } while (false)
