// The fused Adam / AdamW update (backend.h gives the formula): one pass over each parameter,
// reading w, g, m, v once and writing w, m, v, where the same step composed from tensor ops
// would make about ten passes and as many temporaries.

#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <type_traits>

#include "backends/adam_scalars.h"
#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/row_kernel.h"
#include "backends/cpu/strided_loop.h"
#include "backends/dtype_dispatch.h"
#include "base/error.h"

namespace normgrad::backend::cpu {

namespace {

// The scalars are copied first: the stores to w, m and v could otherwise alias them, and the
// compiler would read them again for every element instead of vectorising the loop.
template <typename T>
inline void adam_range(const AdamScalars<T>& scalars, T* w, const T* g, T* m, T* v,
                       std::int64_t begin, std::int64_t end) {
  const AdamScalars<T> s = scalars;
#pragma omp simd
  for (std::int64_t i = begin; i < end; ++i) s.update(w[i], g[i], m[i], v[i]);
}

// The loop above for each dtype, compiled for AVX2 and for baseline x86-64 (row_kernel.h):
// with SSE2 alone the square roots and divisions, not memory, bound the update.
NORMGRAD_ROW_KERNEL void adam_range_float(const AdamScalars<float>& s, float* w, const float* g,
                                          float* m, float* v, std::int64_t begin,
                                          std::int64_t end) {
  adam_range(s, w, g, m, v, begin, end);
}

NORMGRAD_ROW_KERNEL void adam_range_double(const AdamScalars<double>& s, double* w, const double* g,
                                           double* m, double* v, std::int64_t begin,
                                           std::int64_t end) {
  adam_range(s, w, g, m, v, begin, end);
}

}  // namespace

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
    auto scalars = AdamScalars<T>::from(params);
    if (params.scalars != nullptr) scalars.use(params.scalars);  // host memory on the CPU
    T* w = weight.ptr<T>();
    const T* g = grad.ptr<const T>();
    T* m = exp_avg.ptr<T>();
    T* v = exp_avg_sq.ptr<T>();
    parallel_for(weight.numel(), 8, [&](std::int64_t begin, std::int64_t end) {
      if constexpr (std::is_same_v<T, float>)
        adam_range_float(scalars, w, g, m, v, begin, end);
      else
        adam_range_double(scalars, w, g, m, v, begin, end);
    });
  });
}

}  // namespace normgrad::backend::cpu
