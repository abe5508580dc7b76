#pragma once
// The activations and the mask test of the recurrent kernels (recurrent_cells.cu,
// recurrent_normed_gru.cu), each the CUDA twin of the CPU's.

#include <cstdint>

#include "backends/backend.h"
#include "backends/compute_type.h"

namespace normgrad::backend::cuda {

// sigmoid(x) = 1 / (1 + e^-x), and e^x below x = -(max_exponent - 1) ln 2, where e^-x would
// overflow and 1 + e^x rounds to 1 (the CPU's sigmoid_value).
template <typename T> __device__ __forceinline__ T sigmoid(T x) {
  if constexpr (sizeof(T) == 4) {
    constexpr float limit = -127.0f * 0.6931471805599453f;
    return x < limit ? expf(x) : 1.0f / (1.0f + expf(-x));
  } else {
    constexpr double limit = -1023.0 * 0.6931471805599453;
    return x < limit ? ::exp(x) : 1.0 / (1.0 + ::exp(-x));
  }
}

template <typename T> __device__ __forceinline__ T hyperbolic_tangent(T x) {
  if constexpr (sizeof(T) == 4)
    return tanhf(x);
  else
    return ::tanh(x);
}

// The mask is stored in the data's type (bfloat16 included), 0 where a row keeps its state.
template <typename S> __device__ __forceinline__ bool takes_step(const S* mask, std::int64_t row) {
  return mask == nullptr || static_cast<compute_t<S>>(mask[row]) != compute_t<S>(0);
}

// A step's mask as a kernel takes it: null when every row takes the step.
template <typename T> const T* mask_data(const TensorRef* mask) {
  return mask ? mask->ptr<const T>() : nullptr;
}

}  // namespace normgrad::backend::cuda
