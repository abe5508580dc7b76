#include "nn/linear.h"

#include <cmath>

#include "base/error.h"
#include "nn/functional.h"
#include "nn/init.h"
#include "profiler/recorder.h"

namespace normgrad::nn {

Linear::Linear(std::int64_t in_features, std::int64_t out_features, LinearOptions options) {
  NG_CHECK(in_features > 0 && out_features > 0, "Linear",
           "in_features and out_features must be positive, got ", in_features, " and ",
           out_features);
  const double bound = 1.0 / std::sqrt(static_cast<double>(in_features));
  weight = register_parameter(
      "weight",
      init::uniform_(zeros({out_features, in_features}, {.dtype = options.dtype}), -bound, bound));
  if (options.bias)
    bias = register_parameter(
        "bias", init::uniform_(zeros({out_features}, {.dtype = options.dtype}), -bound, bound));
}

Tensor Linear::forward(const Tensor& x) {
  const profiler::ModuleSpan span(this, "Linear");
  return functional::linear(x, weight, bias);
}

}  // namespace normgrad::nn
