// The norm family on the CPU: the fused LayerNorm / RMSNorm / pRMSNorm / L2Norm over
// contiguous or evenly strided rows (norm_rows.h has the formulas and the precision argument;
// backends/backend.h gives the contract and the backward's derivation).
//
// Forward: the row statistic, then the normalised row, one row at a time.
// Backward: the row sums, then dx and the row's share of dgain and dbias, one row at a time,
// with dgain and dbias summed over fixed row blocks, so that they do not depend on the thread
// count.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "backends/bfloat16_widening.h"
#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/kept_scratch.h"
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

// ---- backward ------------------------------------------------------------------------------

namespace {

using namespace norm_rows;

// Where a row's contributions to dgain and dbias go: nowhere, into per-column runs (of dgain,
// dbias or both: the sums not asked for cost a load and a store per value), or per channel.
enum class Partials { None, ColumnGain, ColumnBias, ColumnBoth, Channel };
constexpr bool column_gain_partial(Partials p) {
  return p == Partials::ColumnGain || p == Partials::ColumnBoth;
}
constexpr bool column_bias_partial(Partials p) {
  return p == Partials::ColumnBias || p == Partials::ColumnBoth;
}

// The per-row coefficients of dx, from the row sums.
// Calls function(std::integral_constant<Partials, p>{}) for a run-time p.
template <typename Function> void with_partials(Partials partials, Function&& function) {
  using enum Partials;
  switch (partials) {
    case None:
      return function(std::integral_constant<Partials, None>{});
    case ColumnGain:
      return function(std::integral_constant<Partials, ColumnGain>{});
    case ColumnBias:
      return function(std::integral_constant<Partials, ColumnBias>{});
    case ColumnBoth:
      return function(std::integral_constant<Partials, ColumnBoth>{});
    case Channel:
      return function(std::integral_constant<Partials, Channel>{});
  }
}

template <typename T> struct RowCoefficients {
  T head = 0, tail = 0;   // LayerNorm: the mean, split as in the forward
  T inverse_r = 0;        // rstd
  T mean_dyhat = 0;       // LayerNorm: mean(dŷ)
  T mean_dyhat_yhat = 0;  // LayerNorm: mean(dŷ ŷ)
  T correction = 0;       // RMS family: c (0 for the values past k)
};

// Where dgain/dbias contributions go: per column into T runs (column_gain, column_bias: n
// values each), or per channel into double sums (channel_gain, channel_bias).
template <typename T> struct PartialSink {
  T* column_gain = nullptr;
  T* column_bias = nullptr;
  double* channel_gain = nullptr;
  double* channel_bias = nullptr;
};

// dx over [begin, end) of one row, and the row's dgain/dbias contributions. Per channel, the
// row's sums of dy ŷ and dy are returned through channel_gain_sum/channel_bias_sum.
template <typename T, bool centred, bool column_gain, Partials partials>
void backward_segment(T* dx, const T* x, const T* dy, std::int64_t begin, std::int64_t end,
                      const T* gain, T gain_scalar, const RowCoefficients<T>& co,
                      const PartialSink<T>& sink, double& channel_gain_sum,
                      double& channel_bias_sum) {
  const T head = co.head, tail = co.tail, inverse_r = co.inverse_r;
  const T mean_dyhat = co.mean_dyhat, mean_dyhat_yhat = co.mean_dyhat_yhat;
  const T correction = co.correction;
  T* gain_run = sink.column_gain;
  T* bias_run = sink.column_bias;
  for (std::int64_t first = begin; first < end; first += lane_block) {
    const std::int64_t last = std::min(end, first + lane_block);
    T gain_sum = 0, bias_sum = 0;
#pragma omp simd reduction(+ : gain_sum, bias_sum)
    for (std::int64_t i = first; i < last; ++i) {
      T g;
      if constexpr (column_gain)
        g = gain[i];
      else
        g = gain_scalar;
      // Loaded once: the stores below could alias x and dy as far as the compiler knows.
      const T value = x[i], grad = dy[i];
      const T dyhat = g * grad;
      T yhat;
      if constexpr (centred) {
        yhat = ((value - head) - tail) * inverse_r;
        dx[i] = (dyhat - mean_dyhat - yhat * mean_dyhat_yhat) * inverse_r;
      } else {
        yhat = value * inverse_r;
        dx[i] = dyhat * inverse_r - value * correction;
      }
      if constexpr (column_gain_partial(partials)) gain_run[i] += grad * yhat;
      if constexpr (column_bias_partial(partials)) bias_run[i] += grad;
      if constexpr (partials == Partials::Channel) {
        gain_sum += grad * yhat;
        bias_sum += grad;
      }
    }
    if constexpr (partials == Partials::Channel) {
      channel_gain_sum += static_cast<double>(gain_sum);
      channel_bias_sum += static_cast<double>(bias_sum);
    }
  }
}

// LayerNorm's row sums for the saved mean m: sum dŷ, sum dŷ (x - m), sum (x - m).
template <typename T, bool column_gain>
void layer_norm_row_sums(const T* x, const T* dy, std::int64_t n, const T* gain, T gain_scalar,
                         T saved_mean, double& sum_dyhat, double& sum_dyhat_deviation,
                         double& sum_deviation) {
  sum_dyhat = sum_dyhat_deviation = sum_deviation = 0;
  for (std::int64_t first = 0; first < n; first += lane_block) {
    const std::int64_t last = std::min(n, first + lane_block);
    T a = 0, b = 0, d = 0;
#pragma omp simd reduction(+ : a, b, d)
    for (std::int64_t i = first; i < last; ++i) {
      T g;
      if constexpr (column_gain)
        g = gain[i];
      else
        g = gain_scalar;
      const T dyhat = g * dy[i];
      const T deviation = x[i] - saved_mean;  // exact for x near the mean
      a += dyhat;
      b += dyhat * deviation;
      d += deviation;
    }
    sum_dyhat += static_cast<double>(a);
    sum_dyhat_deviation += static_cast<double>(b);
    sum_deviation += static_cast<double>(d);
  }
}

// The RMS family's row sum, over all n values: sum dŷ_i a_i.
template <typename T, bool column_gain>
double rms_row_sum(const T* x, const T* dy, std::int64_t n, const T* gain, T gain_scalar) {
  double total = 0;
  for (std::int64_t first = 0; first < n; first += lane_block) {
    const std::int64_t last = std::min(n, first + lane_block);
    T sum = 0;
#pragma omp simd reduction(+ : sum)
    for (std::int64_t i = first; i < last; ++i) {
      T g;
      if constexpr (column_gain)
        g = gain[i];
      else
        g = gain_scalar;
      sum += g * dy[i] * x[i];
    }
    total += static_cast<double>(sum);
  }
  return total;
}

template <typename T> struct BackwardTensors {
  T* dx = nullptr;
  const T* dy = nullptr;
  std::int64_t dx_stride = 0, dy_stride = 0;  // between rows (backends/norm_layout.h)
  const T* mean = nullptr;
  const T* rstd = nullptr;
};

// Rows [begin, end): dx, and (unless partials is None) their dgain/dbias contributions.
template <typename T, bool centred, bool column_gain, Partials partials>
void backward_rows(const NormProblem<T>& problem, const BackwardTensors<T>& tensors,
                   std::int64_t begin, std::int64_t end, const PartialSink<T>& sink) {
  const std::int64_t n = problem.n;
  for (std::int64_t row = begin; row < end; ++row) {
    const T* x = problem.x + row * problem.x_stride;
    const T* dy = tensors.dy + row * tensors.dy_stride;
    T* dx = tensors.dx + row * tensors.dx_stride;
    const T gain_scalar = problem.row_gain(row);
    const double inverse_r = static_cast<double>(tensors.rstd[row]);
    RowCoefficients<T> co;
    co.inverse_r = tensors.rstd[row];
    double channel_gain_sum = 0, channel_bias_sum = 0;
    if constexpr (centred) {
      double sum_dyhat = 0, sum_dyhat_deviation = 0, sum_deviation = 0;
      layer_norm_row_sums<T, column_gain>(x, dy, n, problem.gain, gain_scalar, tensors.mean[row],
                                          sum_dyhat, sum_dyhat_deviation, sum_deviation);
      const double count = static_cast<double>(std::max<std::int64_t>(n, 1));
      // The saved mean is the forward's mean rounded to T; this is the rest of it.
      const double tail = sum_deviation / count;
      const double sum_dyhat_yhat = (sum_dyhat_deviation - tail * sum_dyhat) * inverse_r;
      co.head = tensors.mean[row];
      co.tail = static_cast<T>(tail);
      co.mean_dyhat = static_cast<T>(sum_dyhat / count);
      co.mean_dyhat_yhat = static_cast<T>(sum_dyhat_yhat / count);
      backward_segment<T, true, column_gain, partials>(
          dx, x, dy, 0, n, problem.gain, gain_scalar, co, sink, channel_gain_sum, channel_bias_sum);
    } else {
      const double sum = rms_row_sum<T, column_gain>(x, dy, n, problem.gain, gain_scalar);
      const double r = 1.0 / inverse_r;
      double correction = 0;
      if (problem.eps_inside_sqrt) {
        correction = sum * inverse_r * inverse_r * inverse_r / problem.divisor;
      } else {
        // rho = sqrt(q) is 0 when the first k values of the row are all 0, where sqrt has no
        // derivative (autograd's sqrt would give 0 * inf = NaN). We define c = 0 there: the
        // gradient keeps only its direct term dŷ / r and stays finite. rho <= 0 also covers a
        // rho that the rounding of the saved rstd left slightly negative.
        const double rho = r - problem.eps;
        if (rho > 0) correction = sum / (problem.divisor * rho * r * r);
      }
      co.correction = static_cast<T>(correction);
      backward_segment<T, false, column_gain, partials>(dx, x, dy, 0, problem.k, problem.gain,
                                                        gain_scalar, co, sink, channel_gain_sum,
                                                        channel_bias_sum);
      co.correction = 0;  // values past k do not enter the statistic
      backward_segment<T, false, column_gain, partials>(dx, x, dy, problem.k, n, problem.gain,
                                                        gain_scalar, co, sink, channel_gain_sum,
                                                        channel_bias_sum);
    }
    if constexpr (partials == Partials::Channel) {
      sink.channel_gain[row % problem.channels] += channel_gain_sum;
      sink.channel_bias[row % problem.channels] += channel_bias_sum;
    }
  }
}

// Scratch memory (kept_scratch.h), one kept buffer per purpose.
enum class Buffer { BlockPartials, RowRuns };

// Rows [begin, end) of one block, their dgain/dbias sums added into the block's gain_sums and
// bias_sums (double, zeroed by the caller).
template <typename T, bool centred, bool column_gain, Partials partials>
void backward_block(const NormProblem<T>& problem, const BackwardTensors<T>& tensors,
                    std::int64_t begin, std::int64_t end, double* gain_sums, double* bias_sums) {
  if constexpr (partials == Partials::Channel) {
    backward_rows<T, centred, column_gain, partials>(problem, tensors, begin, end,
                                                     {nullptr, nullptr, gain_sums, bias_sums});
  } else {
    // Runs of run_rows rows summed in T, each run then added into the double sums.
    const std::int64_t n = problem.n;
    std::vector<T> fallback;
    T* run = kept_scratch<T, Buffer::RowRuns>(static_cast<std::size_t>(2 * n), fallback);
    std::fill(run, run + 2 * n, T(0));
    for (std::int64_t first = begin; first < end; first += run_rows) {
      backward_rows<T, centred, column_gain, partials>(problem, tensors, first,
                                                       std::min(end, first + run_rows),
                                                       {run, run + n, nullptr, nullptr});
#pragma omp simd
      for (std::int64_t i = 0; i < n; ++i) {
        gain_sums[i] += static_cast<double>(run[i]);
        bias_sums[i] += static_cast<double>(run[n + i]);
        run[i] = 0;
        run[n + i] = 0;
      }
    }
  }
}

// Rows [begin, end) without dgain/dbias; or, with dgain/dbias, the blocks [begin, end), each
// block's sums written to its slot of `partial`.
template <typename T>
NORMGRAD_ROW_KERNEL void backward_range(const NormProblem<T>& problem,
                                        const BackwardTensors<T>& tensors, bool centred,
                                        Partials partials, std::int64_t begin, std::int64_t end,
                                        std::int64_t block_rows, double* partial) {
  const bool column_gain = problem.channels == 0 && problem.gain != nullptr;
  const std::int64_t width = problem.channels > 0 ? problem.channels : problem.n;
  const auto blocks = [&](auto centred_flag, auto column_gain_flag, auto partials_flag) {
    for (std::int64_t block = begin; block < end; ++block) {
      double* gain_sums = partial + block * 2 * width;
      std::fill(gain_sums, gain_sums + 2 * width, 0.0);
      const std::int64_t first = block * block_rows;
      backward_block<T, decltype(centred_flag)::value, decltype(column_gain_flag)::value,
                     decltype(partials_flag)::value>(problem, tensors, first,
                                                     std::min(problem.rows, first + block_rows),
                                                     gain_sums, gain_sums + width);
    }
  };
  with_flag(centred, [&](auto centred_flag) {
    with_flag(column_gain, [&](auto column_gain_flag) {
      constexpr bool centred_value = decltype(centred_flag)::value;
      constexpr bool column_gain_value = decltype(column_gain_flag)::value;
      with_partials(partials, [&](auto partials_flag) {
        if constexpr (decltype(partials_flag)::value == Partials::None)
          backward_rows<T, centred_value, column_gain_value, Partials::None>(problem, tensors,
                                                                             begin, end, {});
        else
          blocks(centred_flag, column_gain_flag, partials_flag);
      });
    });
  });
}

template <typename T>
void norm_backward_typed(const NormProblem<T>& problem, const BackwardTensors<T>& tensors, T* dgain,
                         T* dbias, bool centred) {
  const std::int64_t rows = problem.rows, n = problem.n;
  if (dgain == nullptr && dbias == nullptr) {
    parallel_for(rows, n, [&](std::int64_t begin, std::int64_t end) {
      backward_range(problem, tensors, centred, Partials::None, begin, end, 0, nullptr);
    });
    return;
  }
  // One slot of (gain sums, bias sums) per block of rows; the block size depends on the row
  // count alone, never on the threads.
  const std::int64_t width = problem.channels > 0 ? problem.channels : n;
  const std::int64_t block_rows =
      std::max(min_block_rows, (rows + max_partial_blocks - 1) / max_partial_blocks);
  const std::int64_t blocks = (rows + block_rows - 1) / block_rows;
  const std::int64_t slot = 2 * width;
  const Partials partials = problem.channels > 0 ? Partials::Channel
                            : dgain == nullptr   ? Partials::ColumnBias
                            : dbias == nullptr   ? Partials::ColumnGain
                                                 : Partials::ColumnBoth;
  std::vector<double> fallback;
  double* partial = kept_scratch<double, Buffer::BlockPartials>(
      static_cast<std::size_t>(blocks * slot), fallback);
  parallel_for(blocks, block_rows * n, [&](std::int64_t begin, std::int64_t end) {
    backward_range(problem, tensors, centred, partials, begin, end, block_rows, partial);
  });
  // Block partials added in block order: the same sums for any thread count.
  std::vector<double> total(static_cast<std::size_t>(slot), 0.0);
  for (std::int64_t block = 0; block < blocks; ++block) {
    const double* source = partial + block * slot;
#pragma omp simd
    for (std::int64_t i = 0; i < slot; ++i) total[i] += source[i];
  }
  for (std::int64_t i = 0; i < width; ++i) {
    if (dgain != nullptr) dgain[i] = static_cast<T>(total[i]);
    if (dbias != nullptr) dbias[i] = static_cast<T>(total[width + i]);
  }
}

}  // namespace

void CpuBackend::norm_backward(const NormParams& params, const TensorRef& dx,
                               const TensorRef* dgain, const TensorRef* dbias, const TensorRef& dy,
                               const TensorRef& x, const TensorRef& mean, const TensorRef& rstd,
                               const TensorRef* gain) {
  const char* op = "cpu norm_backward";
  const DType statistics = compute_dtype(x.dtype);
  NG_CHECK(dx.dtype == x.dtype && dy.dtype == x.dtype && mean.dtype == statistics &&
               rstd.dtype == statistics,
           op, "dtypes differ: x ", x.dtype, ", dx ", dx.dtype, ", dy ", dy.dtype, ", mean ",
           mean.dtype, ", rstd ", rstd.dtype, " (mean and rstd must be ", statistics, ")");
  if (any_bfloat16({&dx, &dy, &x})) {  // mean and rstd are float32 already
    Float32Copies f(*this);
    norm_backward(params, f.output(dx), f.output(dgain), f.output(dbias), f.input(dy), f.input(x),
                  mean, rstd, f.input(gain));
    return f.finish();
  }
  dispatch_floating(x.dtype, op, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const NormProblem<T> problem = make_problem<T>(params, x, gain, nullptr, op);
    check_affine({dgain, dbias}, x.dtype, params.channels > 0 ? params.channels : problem.n,
                 "dgain and dbias", op);
    BackwardTensors<T> tensors;
    tensors.dx = dx.ptr<T>();
    tensors.dy = dy.ptr<const T>();
    tensors.dx_stride = norm_row_stride(dx, problem.rows, problem.n, op, "dx");
    tensors.dy_stride = norm_row_stride(dy, problem.rows, problem.n, op, "dy");
    tensors.mean = mean.ptr<const T>();
    tensors.rstd = rstd.ptr<const T>();
    norm_backward_typed(problem, tensors, dgain != nullptr ? dgain->ptr<T>() : nullptr,
                        dbias != nullptr ? dbias->ptr<T>() : nullptr, params.centred);
  });
}

}  // namespace normgrad::backend::cpu
