#pragma once
// gradcheck: compares the gradient that backward() computes with central finite differences,
// in float64.
//
// For a function f of the inputs, it draws a fixed random tensor v shaped like f's output and
// checks the gradient of L = sum(v * f(inputs)) with respect to every element of every input
// that requires grad:
//   numeric  (L(x + h e_i) - L(x - h e_i)) / 2h,   h = eps * max(1, |x_i|)
//   analytic (dL/dx)_i from one backward pass
// and passes when |analytic - numeric| <= atol + rtol * |numeric| everywhere.

#include <functional>
#include <string>
#include <vector>

#include "core/tensor.h"

namespace normgrad {

struct GradcheckOptions {
  double eps = 1e-6;
  double atol = 1e-6;
  double rtol = 1e-4;
  std::uint64_t seed = 0;  // for the projection v
};

struct GradcheckResult {
  bool ok = true;
  std::string message;  // the worst mismatch, or a summary when all pass
  explicit operator bool() const { return ok; }
};

using DifferentiableFunction = std::function<Tensor(const std::vector<Tensor>& inputs)>;

// The inputs must be float64 on the CPU. Inputs that do not require grad are held fixed.
GradcheckResult gradcheck(const DifferentiableFunction& function,
                          const std::vector<Tensor>& inputs, GradcheckOptions options = {});

}  // namespace normgrad
