// The fused Adam / AdamW update on the GPU (backend.h gives the formula): one pass over each
// parameter, each thread reading w, g, m, v once and writing w, m, v. The operations are those
// of the CPU kernel in the same order, in the parameter's type, so both devices agree to
// rounding; every element is independent, so the result does not depend on the grid.

#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <initializer_list>

#include "backends/adam_scalars.h"
#include "backends/cuda/cuda_backend.h"
#include "backends/cuda/device_guard.h"
#include "backends/cuda/launch.cuh"
#include "backends/dtype_dispatch.h"
#include "base/error.h"

namespace normgrad::backend::cuda {

namespace {

// `values`: null, or the step's scalars in device memory (AdamParams::scalars).
template <typename T>
__global__ void adam_kernel(std::int64_t count, T* __restrict__ w, const T* __restrict__ g,
                            T* __restrict__ m, T* __restrict__ v, AdamScalars<T> s,
                            const double* __restrict__ values) {
  if (values != nullptr) s.use(values);
  NG_KERNEL_LOOP(i, count) s.update(w[i], g[i], m[i], v[i]);
}

}  // namespace

void CudaBackend::adam_update(const AdamParams& params, const TensorRef& weight,
                              const TensorRef& grad, const TensorRef& exp_avg,
                              const TensorRef& exp_avg_sq) {
  DeviceGuard guard(context_.device);
  const Context& context = context_;
  const char* op = "cuda adam_update";
  for (const TensorRef* operand : {&grad, &exp_avg, &exp_avg_sq}) {
    NG_CHECK(operand->dtype == weight.dtype, op, "dtypes differ: weight ", weight.dtype, ", got ",
             operand->dtype);
    NG_CHECK(operand->shape == weight.shape, op, "shapes differ: weight ", weight.shape, ", got ",
             operand->shape);
  }
  for (const TensorRef* operand : {&weight, &grad, &exp_avg, &exp_avg_sq})
    NG_CHECK(is_contiguous(*operand), op, "operands must be contiguous, got strides ",
             operand->strides, " for shape ", operand->shape);
  const std::int64_t count = weight.numel();
  if (count == 0) return;
  dispatch_floating(weight.dtype, op, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const auto s = AdamScalars<T>::from(params);
    adam_kernel<T><<<grid_for(count, context), threads_per_block, 0, context.stream>>>(
        count, weight.ptr<T>(), grad.ptr<const T>(), exp_avg.ptr<T>(), exp_avg_sq.ptr<T>(), s,
        params.scalars);
    NG_CUDA_CHECK_LAUNCH();
  });
}

}  // namespace normgrad::backend::cuda
