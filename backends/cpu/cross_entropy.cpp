// Softmax cross-entropy, fused (backend.h gives the formulas). Forward, per row: the max, then
// sum exp(x - max) (the vector exp of vector_exp.h for float32), lse = max + log(sum), and the
// loss from x_t and, with label smoothing, mean(x). Backward, per row: dx = dloss (softmax -
// q), the softmax recomputed from the saved lse, so forward keeps no [rows, n] tensor. Rows
// are independent: OpenMP over rows, the same results for any thread count.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/strided_loop.h"
#include "backends/cpu/simd/vector_exp.h"
#include "backends/dtype_dispatch.h"
#include "base/error.h"

namespace normgrad::backend::cpu {

namespace {

// The row's log sum exp, stable: max + log sum exp(x - max).
double log_sum_exp(const float* x, std::int64_t n) {
  const float shift = max_row(x, n);
  return static_cast<double>(shift) + std::log(exp_shifted_sum_row(nullptr, x, n, shift));
}

double log_sum_exp(const double* x, std::int64_t n) {
  double shift = x[0];
  for (std::int64_t j = 1; j < n; ++j) shift = std::max(shift, x[j]);
  double sum = 0;
  for (std::int64_t j = 0; j < n; ++j) sum += std::exp(x[j] - shift);
  return shift + std::log(sum);
}

template <typename T> double row_mean(const T* x, std::int64_t n) {
  double sum = 0;
#pragma omp simd reduction(+ : sum)
  for (std::int64_t j = 0; j < n; ++j) sum += static_cast<double>(x[j]);
  return sum / static_cast<double>(n);
}

// Checks every target before any thread starts (an exception must not leave a parallel loop).
void check_targets(const TensorRef& logits, const TensorRef& targets,
                   const CrossEntropyParams& params, const char* op) {
  NG_CHECK(logits.rank() == 2 && targets.rank() == 1 && targets.shape[0] == logits.shape[0], op,
           "expects logits [rows, n] and targets [rows], got ", logits.shape, " and ",
           targets.shape);
  NG_CHECK(targets.dtype == DType::Int64, op, "targets must be int64, got ", targets.dtype);
  const std::int64_t n = logits.shape[1];
  const auto* target = targets.ptr<const std::int64_t>();
  for (std::int64_t row = 0; row < targets.shape[0]; ++row)
    NG_CHECK(target[row] == params.ignore_index || (target[row] >= 0 && target[row] < n), op,
             "target ", target[row], " of row ", row, " is not a class in [0, ", n,
             ") nor the ignore_index ", params.ignore_index);
}

}  // namespace

void CpuBackend::cross_entropy_forward(const CrossEntropyParams& params, const TensorRef& loss,
                                       const TensorRef& log_normaliser, const TensorRef& logits,
                                       const TensorRef& targets) {
  const char* op = "cpu cross_entropy_forward";
  check_targets(logits, targets, params, op);
  dispatch_floating(logits.dtype, op, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const std::int64_t rows = logits.shape[0], n = logits.shape[1];
    const T* x = logits.ptr<const T>();
    const auto* target = targets.ptr<const std::int64_t>();
    T* out = loss.ptr<T>();
    T* lse_out = log_normaliser.ptr<T>();
    const double smoothing = params.label_smoothing;
    parallel_for(rows, n, [&](std::int64_t begin, std::int64_t end) {
      for (std::int64_t row = begin; row < end; ++row) {
        const T* x_row = x + row * n;
        if (n == 0 || target[row] == params.ignore_index) {
          out[row] = T(0);
          lse_out[row] = T(0);
          continue;
        }
        const double lse = log_sum_exp(x_row, n);
        double value = (1 - smoothing) * (lse - static_cast<double>(x_row[target[row]]));
        if (smoothing != 0) value += smoothing * (lse - row_mean(x_row, n));
        out[row] = static_cast<T>(value);
        lse_out[row] = static_cast<T>(lse);
      }
    });
  });
}

void CpuBackend::cross_entropy_backward(const CrossEntropyParams& params, const TensorRef& dlogits,
                                        const TensorRef& dloss, const TensorRef& logits,
                                        const TensorRef& targets, const TensorRef& log_normaliser) {
  const char* op = "cpu cross_entropy_backward";
  check_targets(logits, targets, params, op);
  dispatch_floating(logits.dtype, op, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const std::int64_t rows = logits.shape[0], n = logits.shape[1];
    const T* x = logits.ptr<const T>();
    const auto* target = targets.ptr<const std::int64_t>();
    const T* upstream = dloss.ptr<const T>();
    const T* lse = log_normaliser.ptr<const T>();
    T* dx = dlogits.ptr<T>();
    parallel_for(rows, n, [&](std::int64_t begin, std::int64_t end) {
      for (std::int64_t row = begin; row < end; ++row) {
        T* dx_row = dx + row * n;
        if (target[row] == params.ignore_index) {
          for (std::int64_t j = 0; j < n; ++j) dx_row[j] = T(0);
          continue;
        }
        const T* x_row = x + row * n;
        const T scale = upstream[row];
        const T uniform = static_cast<T>(params.label_smoothing / static_cast<double>(n));
        // softmax_j = exp(x_j - lse): one vector exp pass for float32, std::exp for float64.
        if constexpr (std::is_same_v<T, float>) {
          exp_shifted_sum_row(dx_row, x_row, n, lse[row]);
        } else {
          for (std::int64_t j = 0; j < n; ++j) dx_row[j] = std::exp(x_row[j] - lse[row]);
        }
#pragma omp simd
        for (std::int64_t j = 0; j < n; ++j) dx_row[j] = (dx_row[j] - uniform) * scale;
        dx_row[target[row]] -= static_cast<T>(1 - params.label_smoothing) * scale;
      }
    });
  });
}

}  // namespace normgrad::backend::cpu
