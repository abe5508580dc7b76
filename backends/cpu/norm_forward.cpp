// The fused normalisers' forward pass: the row statistic, then the normalised row, one row at
// a time (norm_rows.h has the formulas and the precision argument).

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "backends/bfloat16_widening.h"
#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/norm_rows.h"
#include "backends/cpu/row_kernel.h"
#include "backends/cpu/strided_loop.h"
#include "backends/dtype_dispatch.h"
#include "base/error.h"

namespace normgrad::backend::cpu {

namespace {

using namespace norm_rows;

// y = g ((x - head) - tail) scale + b over one row; head = tail = 0 unless centred. Gain and
// bias are per column (arrays) or one value for the row (scalars).
template <typename T, bool centred, bool column_gain, bool column_bias>
void write_normalised_row(T* y, const T* x, std::int64_t n, T head, T tail, T scale, const T* gain,
                          const T* bias, T gain_scalar, T bias_scalar) {
#pragma omp simd
  for (std::int64_t i = 0; i < n; ++i) {
    T normalised;
    if constexpr (centred)
      normalised = ((x[i] - head) - tail) * scale;
    else
      normalised = x[i] * scale;
    T g, b;
    if constexpr (column_gain)
      g = gain[i];
    else
      g = gain_scalar;
    if constexpr (column_bias)
      b = bias[i];
    else
      b = bias_scalar;
    y[i] = normalised * g + b;
  }
}

template <typename T, bool centred, bool column_gain, bool column_bias>
void forward_rows(const NormProblem<T>& problem, T* y, std::int64_t y_stride, T* mean, T* rstd,
                  std::int64_t begin, std::int64_t end) {
  const std::int64_t n = problem.n;
  for (std::int64_t row = begin; row < end; ++row) {
    const T* x_row = problem.x + row * problem.x_stride;
    double mu = 0, inverse_r = 0;
    if constexpr (centred) {
      const double count = static_cast<double>(n);
      mu = static_cast<double>(x_row[0]) + sum_of_deviations(x_row, n, x_row[0]) / count;
      const T mean_head = static_cast<T>(mu);
      const T mean_tail = static_cast<T>(mu - static_cast<double>(mean_head));
      const double variance = sum_of_squared_deviations(x_row, n, mean_head, mean_tail) / count;
      inverse_r = 1.0 / std::sqrt(variance + problem.eps);
    } else {
      const double mean_square = sum_of_squares(x_row, problem.k) / problem.divisor;
      inverse_r = 1.0 / (problem.eps_inside_sqrt ? std::sqrt(mean_square + problem.eps)
                                                 : std::sqrt(mean_square) + problem.eps);
    }
    const T head = static_cast<T>(mu);
    const T tail = static_cast<T>(mu - static_cast<double>(head));
    write_normalised_row<T, centred, column_gain, column_bias>(
        y + row * y_stride, x_row, n, head, tail, static_cast<T>(inverse_r), problem.gain,
        problem.bias, problem.row_gain(row), problem.row_bias(row));
    mean[row] = head;
    rstd[row] = static_cast<T>(inverse_r);
  }
}

// Rows [begin, end), the flags turned into template arguments inside the clone.
template <typename T>
NORMGRAD_ROW_KERNEL void forward_range(const NormProblem<T>& problem, T* y, std::int64_t y_stride,
                                       T* mean, T* rstd, bool centred, std::int64_t begin,
                                       std::int64_t end) {
  const bool column = problem.channels == 0;
  with_flag(centred, [&](auto centred_flag) {
    with_flag(column && problem.gain != nullptr, [&](auto column_gain) {
      with_flag(column && problem.bias != nullptr, [&](auto column_bias) {
        forward_rows<T, decltype(centred_flag)::value, decltype(column_gain)::value,
                     decltype(column_bias)::value>(problem, y, y_stride, mean, rstd, begin, end);
      });
    });
  });
}

template <typename T>
void norm_forward_typed(const NormProblem<T>& problem, T* y, std::int64_t y_stride, T* mean,
                        T* rstd, bool centred) {
  parallel_for(problem.rows, problem.n, [&](std::int64_t begin, std::int64_t end) {
    forward_range(problem, y, y_stride, mean, rstd, centred, begin, end);
  });
}

}  // namespace

void CpuBackend::norm_forward(const NormParams& params, const TensorRef& y, const TensorRef& mean,
                              const TensorRef& rstd, const TensorRef& x, const TensorRef* gain,
                              const TensorRef* bias) {
  const char* op = "cpu norm_forward";
  const DType statistics = compute_dtype(x.dtype);
  NG_CHECK(y.dtype == x.dtype && mean.dtype == statistics && rstd.dtype == statistics, op,
           "dtypes differ: x ", x.dtype, ", y ", y.dtype, ", mean ", mean.dtype, ", rstd ",
           rstd.dtype, " (mean and rstd must be ", statistics, ")");
  if (any_bfloat16({&y, &x})) {  // mean and rstd are float32 already
    Float32Copies f(*this);
    norm_forward(params, f.output(y), mean, rstd, f.input(x), f.input(gain), f.input(bias));
    return f.finish();
  }
  dispatch_floating(x.dtype, op, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const NormProblem<T> problem = make_problem<T>(params, x, gain, bias, op);
    const std::int64_t y_stride = norm_row_stride(y, problem.rows, problem.n, op, "y");
    norm_forward_typed(problem, y.ptr<T>(), y_stride, mean.ptr<T>(), rstd.ptr<T>(), params.centred);
  });
}

}  // namespace normgrad::backend::cpu
