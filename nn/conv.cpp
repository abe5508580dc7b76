#include "nn/conv.h"

#include <cmath>

#include "autograd/mixed_precision.h"
#include "base/error.h"
#include "nn/init.h"
#include "profiler/recorder.h"

namespace normgrad::nn {

Conv2d::Conv2d(std::int64_t in_channels, std::int64_t out_channels, Size2d kernel,
               Conv2dOptions options, Generator& generator)
    : options_(options) {
  NG_CHECK(in_channels > 0 && out_channels > 0, "Conv2d",
           "channel counts must be positive, got in_channels ", in_channels, ", out_channels ",
           out_channels);
  NG_CHECK(kernel.h > 0 && kernel.w > 0, "Conv2d", "kernel size must be positive, got [", kernel.h,
           ", ", kernel.w, "]");
  NG_CHECK(options.stride.h > 0 && options.stride.w > 0 && options.dilation.h > 0 &&
               options.dilation.w > 0 && options.padding.h >= 0 && options.padding.w >= 0,
           "Conv2d", "stride and dilation must be positive and padding non-negative, got stride [",
           options.stride.h, ", ", options.stride.w, "], padding [", options.padding.h, ", ",
           options.padding.w, "], dilation [", options.dilation.h, ", ", options.dilation.w, "]");
  NG_CHECK(is_floating(options.dtype), "Conv2d", "expects a floating-point dtype, got ",
           options.dtype);
  const TensorOptions tensor_options{.dtype = options.dtype};
  // kaiming_uniform_ with slope a = sqrt(5): gain sqrt(2 / (1 + a^2)) = 1/sqrt(3), bound
  // sqrt(3) gain / sqrt(fan_in) = 1/sqrt(fan_in).
  weight = register_parameter(
      "weight",
      init::kaiming_uniform_(empty({out_channels, in_channels, kernel.h, kernel.w}, tensor_options),
                             std::sqrt(5.0), init::FanMode::FanIn, "leaky_relu", generator));
  if (options.bias) {
    const double bound = 1.0 / std::sqrt(static_cast<double>(init::compute_fans(weight).fan_in));
    bias = register_parameter(
        "bias", init::uniform_(empty({out_channels}, tensor_options), -bound, bound, generator));
  }
}

Tensor Conv2d::forward(const Tensor& x) {
  const profiler::ModuleSpan span(this, "Conv2d");

  return conv2d(x, in_input_dtype(weight, x), in_input_dtype(bias, x), options_.stride,
                options_.padding, options_.dilation);
}

}  // namespace normgrad::nn
