#pragma once
// The scalars of one Adam or AdamW step (backend.h gives the formula) in the parameter's type,
// with the bias corrections folded in, and the update of one element, as both backends'
// fused kernels use them.

#include <cmath>

#include "backends/backend.h"
#include "backends/host_device.h"

namespace normgrad::backend {

template <typename T> struct AdamScalars {
  T lr, beta1, beta2, eps, decay;
  T step_size;                // lr / bias_correction1
  T inverse_root_correction;  // 1 / sqrt(bias_correction2)
  T inverse_correction;       // 1 / bias_correction2
  bool decoupled;
  bool eps_inside_sqrt;

  static AdamScalars from(const AdamParams& params) {
    return {static_cast<T>(params.lr),
            static_cast<T>(params.beta1),
            static_cast<T>(params.beta2),
            static_cast<T>(params.eps),
            static_cast<T>(params.weight_decay),
            static_cast<T>(params.lr / params.bias_correction1),
            static_cast<T>(1.0 / std::sqrt(params.bias_correction2)),
            static_cast<T>(1.0 / params.bias_correction2),
            params.decoupled,
            params.eps_inside_sqrt};
  }

  // The step's values from memory (AdamParams::scalars), in place of those from the params.
  NORMGRAD_HOST_DEVICE void use(const double* values) {
    lr = static_cast<T>(values[0]);
    step_size = static_cast<T>(values[1]);
    inverse_root_correction = static_cast<T>(values[2]);
    inverse_correction = static_cast<T>(values[3]);
  }

  // One element of the step: w, m and v updated from the gradient g, in the same operations
  // on every device, so that the backends agree to rounding.
  NORMGRAD_HOST_DEVICE void update(T& w, T g, T& m, T& v) const {
    T value = w;
    if (decoupled)
      value -= lr * decay * value;
    else
      g += decay * value;
    const T first = beta1 * m + (T(1) - beta1) * g;
    const T second = beta2 * v + (T(1) - beta2) * g * g;
    m = first;
    v = second;
#if defined(__CUDA_ARCH__)
    using ::sqrt;
#else
    using std::sqrt;
#endif
    const T denominator = eps_inside_sqrt ? sqrt(second * inverse_correction + eps)
                                          : sqrt(second) * inverse_root_correction + eps;
    w = value - step_size * first / denominator;
  }
};

}  // namespace normgrad::backend
