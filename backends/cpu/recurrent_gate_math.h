#pragma once
// What the recurrent kernels share (recurrent_cells.cpp, recurrent_lstm_step.cpp): the activations
// in place over a unit-stride run (float32 through the vector kernels of vector_exp.h, float64
// value by value), and the mask test.

#include <cmath>
#include <cstdint>

#include "backends/cpu/simd/vector_exp.h"

namespace normgrad::backend::cpu {

inline void sigmoid_in_place(float* values, std::int64_t count) {
  sigmoid_row(values, values, count);
}
inline void tanh_in_place(float* values, std::int64_t count) { tanh_row(values, values, count); }
inline void sigmoid_in_place(double* values, std::int64_t count) {
  for (std::int64_t j = 0; j < count; ++j) values[j] = 1.0 / (1.0 + std::exp(-values[j]));
}
inline void tanh_in_place(double* values, std::int64_t count) {
  for (std::int64_t j = 0; j < count; ++j) values[j] = std::tanh(values[j]);
}

// Whether row `row` takes the step: there is no mask (null), or its value there is nonzero.
template <typename T> bool takes_step(const T* mask, std::int64_t row) {
  return mask == nullptr || mask[row] != T(0);
}

}  // namespace normgrad::backend::cpu
