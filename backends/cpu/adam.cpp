// The fused Adam / AdamW update (backend.h gives the formula): one pass over each parameter,
// reading w, g, m, v once and writing w, m, v, where the same step composed from tensor ops
// would make about ten passes and as many temporaries.

#include <cmath>
#include <cstdint>
#include <initializer_list>

#include "backends/cpu/cpu_backend.h"
#include "backends/dtype_dispatch.h"
#include "backends/cpu/strided_loop.h"
#include "core/error.h"

namespace normgrad::backend::cpu {

void CpuBackend::adam_update(const AdamParams& params, const TensorRef& weight,
                             const TensorRef& grad, const TensorRef& exp_avg,
                             const TensorRef& exp_avg_sq) {
  const char* op = "cpu adam_update";
  for (const TensorRef* operand : {&grad, &exp_avg, &exp_avg_sq}) {
    NG_CHECK(operand->dtype == weight.dtype, op, "dtypes differ: weight ", weight.dtype, ", got ",
             operand->dtype);
    NG_CHECK(operand->shape == weight.shape, op, "shapes differ: weight ", weight.shape, ", got ",
             operand->shape);
  }
  dispatch_floating(weight.dtype, op, [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* w = weight.ptr<T>();
    const T* g = grad.ptr<const T>();
    T* m = exp_avg.ptr<T>();
    T* v = exp_avg_sq.ptr<T>();
    const T lr = static_cast<T>(params.lr), beta1 = static_cast<T>(params.beta1),
            beta2 = static_cast<T>(params.beta2), eps = static_cast<T>(params.eps);
    const T decay = static_cast<T>(params.weight_decay);
    // The step size with the first correction folded in, and 1 / sqrt(second correction).
    const T step_size = static_cast<T>(params.lr / params.bias_correction1);
    const T inverse_root_correction = static_cast<T>(1.0 / std::sqrt(params.bias_correction2));
    const bool decoupled = params.decoupled;
    parallel_for(weight.numel(), 8, [&](std::int64_t begin, std::int64_t end) {
#pragma omp simd
      for (std::int64_t i = begin; i < end; ++i) {
        T gradient = g[i];
        T value = w[i];
        if (decoupled)
          value -= lr * decay * value;
        else
          gradient += decay * value;
        const T first = beta1 * m[i] + (T(1) - beta1) * gradient;
        const T second = beta2 * v[i] + (T(1) - beta2) * gradient * gradient;
        m[i] = first;
        v[i] = second;
        w[i] = value - step_size * first / (std::sqrt(second) * inverse_root_correction + eps);
      }
    });
  });
}

}  // namespace normgrad::backend::cpu
