#pragma once
// The scalars of one Adam or AdamW step (backend.h gives the formula) in the parameter's type,
// with the bias corrections folded in, as both backends' fused kernels read them.

#include <cmath>

#include "backends/backend.h"

namespace normgrad::backend {

template <typename T> struct AdamScalars {
  T lr, beta1, beta2, eps, decay;
  T step_size;                // lr / bias_correction1
  T inverse_root_correction;  // 1 / sqrt(bias_correction2)
  bool decoupled;

  static AdamScalars from(const AdamParams& params) {
    return {static_cast<T>(params.lr),
            static_cast<T>(params.beta1),
            static_cast<T>(params.beta2),
            static_cast<T>(params.eps),
            static_cast<T>(params.weight_decay),
            static_cast<T>(params.lr / params.bias_correction1),
            static_cast<T>(1.0 / std::sqrt(params.bias_correction2)),
            params.decoupled};
  }
};

}  // namespace normgrad::backend
