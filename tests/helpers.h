#pragma once
// Helpers shared by the test files: building float64 leaves, comparing tensors, and
// checking that an error names the operation and the offending values.

#include <doctest/doctest.h>
#include <normgrad/normgrad.h>

#include <cmath>
#include <string>
#include <vector>

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

// An int64 mask from nested rows of 0 and 1 (nonzero = blocked), as attention takes it.
inline Tensor int_mask(std::initializer_list<std::initializer_list<double>> rows) {
  return tensor(rows, {.dtype = DType::Int64});
}

// True when every element agrees within atol + rtol * |expected|.
inline bool all_close(const Tensor& actual, const std::vector<double>& expected, double rtol = 1e-6,
                      double atol = 1e-8) {
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

// Two lists of tensors (a model's gradients, say), each read as one vector: |a - b| / |b| and
// the cosine of the angle between a and b, summed in float64.
struct VectorComparison {
  double distance = 0;
  double cosine = 0;
};
inline VectorComparison compare_as_vectors(const std::vector<Tensor>& a,
                                           const std::vector<Tensor>& b) {
  REQUIRE(a.size() == b.size());
  double difference = 0, size_a = 0, size_b = 0, dot = 0;
  for (std::size_t i = 0; i < b.size(); ++i) {
    REQUIRE(a[i].shape() == b[i].shape());
    const auto x = a[i].to(DType::Float64).to_vector<double>(),
               y = b[i].to(DType::Float64).to_vector<double>();
    for (std::size_t k = 0; k < y.size(); ++k) {
      difference += (x[k] - y[k]) * (x[k] - y[k]);
      size_a += x[k] * x[k];
      size_b += y[k] * y[k];
      dot += x[k] * y[k];
    }
  }
  return {std::sqrt(difference / size_b), dot / std::sqrt(size_a * size_b)};
}

// The message of the normgrad::Error that `body` throws, or "" if it throws none.
template <typename Body> std::string error_of(Body&& body) {
  try {
    body();
  } catch (const normgrad::Error& error) {
    return error.what();
  }
  return "";
}

}  // namespace testing

// Passes when the gradient check passes; on failure, prints the worst mismatch.
#define CHECK_GRADIENTS(function, ...)                                          \
  do {                                                                          \
    const auto gradcheck_result = ::normgrad::gradcheck(function, __VA_ARGS__); \
    INFO(gradcheck_result.message);                                             \
    CHECK(gradcheck_result.ok);                                                 \
  } while (false)

// Checks that `expression` throws normgrad::Error whose message contains every fragment.
#define CHECK_ERROR(expression, ...)                                                    \
  do {                                                                                  \
    const std::string error_message = ::testing::error_of([&] { (void)(expression); }); \
    INFO("message: " << error_message);                                                 \
    CHECK_FALSE(error_message.empty());                                                 \
    for (const char* fragment : {__VA_ARGS__})                                          \
      CHECK(error_message.find(fragment) != std::string::npos);                         \
  } while (false)
