#pragma once
// The fused normalisers' shared parts — sizes, the row problem, the row sums — for norm.cpp and the
// LSTM step (recurrent.cpp). The fused normalisers, forward and backward: LayerNorm and
// the RMS family (RMSNorm, pRMSNorm, L2Norm) over rows of n adjacent values a_1..a_n, the rows
// contiguous or evenly strided (backend.h gives the contract).
//
// The formulas, forward and backward, are the contract's (backends/backend.h: NormParams and
// norm_backward). LayerNorm's variance is centred, two passes, never the cancelling
// E[a^2] - E[a]^2; statistics are summed in T lanes per block, the blocks in double (below).
//
// Each row is read from memory once: the statistic (or the backward's row sums) is a first
// loop over the row, and the output loop that follows finds the row in L1 (no stored ŷ). Rows are
// independent, so they are spread over threads and the results do not depend on the thread count.
// dgain and dbias are sums over rows: rows are cut into fixed blocks (their size depends on the row
// count only), each block's double partial sums are built by whichever thread gets it, and the
// block partials are added in block order, so they too are bit-identical for any thread count.
//
// Sums and precision. Row sums are summed in T lanes over blocks of lane_block values, the block
// sums in double: converting every float32 to double would double the vector work of loops that
// are otherwise limited by memory, and a block adds at most 64 terms per float32 lane, an error
// below 4e-6 of the sum of magnitudes. LayerNorm's mean is summed as deviations from the row's
// first value, and its variance from the mean split as below, so that both stay exact to the
// last float32 digit for rows whose mean is far larger than their spread. dgain and dbias likewise
// sum run_rows rows in T, then add the run into the block's double partial sums.
//
// In float32, the mean subtracted in the output loops is split into a float head and a float
// tail (mu = head + tail to double precision): a - head is exact for values near the mean, so a
// row with a mean of 1e6 and a spread of 1e-2 keeps its precision. The mean saved for backward
// is only the head; backward recovers the tail as sum(a - head) / n in the same pass as its
// other row sums.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <type_traits>

#include "backends/backend.h"
#include "backends/norm_layout.h"
#include "base/error.h"

// Internal to the CPU backend's norm kernels.
namespace normgrad::backend::cpu::norm_rows {

// dgain/dbias: at most this many row blocks, of at least min_block_rows rows each. More blocks
// than threads keeps the split even; each block costs one slot of partial sums.
constexpr std::int64_t max_partial_blocks = 64;
constexpr std::int64_t min_block_rows = 16;
// Values summed in T lanes before the sum moves to double, and rows of dgain/dbias summed in T
// before a block's double partial sums take them.
constexpr std::int64_t lane_block = 256;
constexpr std::int64_t run_rows = 16;

// Calls function(std::bool_constant<flag>{}) for a run-time flag.
template <typename Function> decltype(auto) with_flag(bool flag, Function&& function) {
  if (flag) return function(std::true_type{});
  return function(std::false_type{});
}

// What every row kernel needs, as raw pointers; gain and bias may be null.
template <typename T> struct NormProblem {
  std::int64_t rows = 0;
  std::int64_t n = 0;
  std::int64_t k = 0;  // RMS family: values that give the statistic
  double divisor = 1;  // RMS family
  double eps = 0;
  bool eps_inside_sqrt = true;
  std::int64_t channels = 0;  // > 0: gain and bias per channel, channel = row % channels
  const T* x = nullptr;
  std::int64_t x_stride = 0;  // row r of x at x + r x_stride (backends/norm_layout.h)
  const T* gain = nullptr;
  const T* bias = nullptr;

  // The gain and bias of a row where they are one value per row (per channel, or absent).
  T row_gain(std::int64_t row) const {
    return channels > 0 && gain != nullptr ? gain[row % channels] : T(1);
  }
  T row_bias(std::int64_t row) const {
    return channels > 0 && bias != nullptr ? bias[row % channels] : T(0);
  }
};

// ---- row sums --------------------------------------------------------------------------------

// sum (x - shift), in T lanes per block of lane_block values, the blocks in double. With the
// shift one of the row's own values, x - shift is exact for values near it (within a factor of
// 2, Sterbenz), so a row with a large mean and a small spread loses nothing here.
template <typename T> double sum_of_deviations(const T* x, std::int64_t count, T shift) {
  double total = 0;
  for (std::int64_t first = 0; first < count; first += lane_block) {
    const std::int64_t last = std::min(count, first + lane_block);
    T sum = 0;
#pragma omp simd reduction(+ : sum)
    for (std::int64_t i = first; i < last; ++i) sum += x[i] - shift;
    total += static_cast<double>(sum);
  }
  return total;
}

// sum x^2 in T lanes per block of lane_block values, the blocks in double.
template <typename T> double sum_of_squares(const T* x, std::int64_t count) {
  double total = 0;
  for (std::int64_t first = 0; first < count; first += lane_block) {
    const std::int64_t last = std::min(count, first + lane_block);
    T sum = 0;
#pragma omp simd reduction(+ : sum)
    for (std::int64_t i = first; i < last; ++i) sum += x[i] * x[i];
    total += static_cast<double>(sum);
  }
  return total;
}

// sum ((x - head) - tail)^2, blocked like the sums above: the mean mu = head + tail is split
// into a T head and the T rest, x - head is exact for x near the mean, and the deviations are
// then as precise as T allows (the centred two-pass variance, never E[x^2] - E[x]^2).
template <typename T>
double sum_of_squared_deviations(const T* x, std::int64_t count, T head, T tail) {
  double total = 0;
  for (std::int64_t first = 0; first < count; first += lane_block) {
    const std::int64_t last = std::min(count, first + lane_block);
    T sum = 0;
#pragma omp simd reduction(+ : sum)
    for (std::int64_t i = first; i < last; ++i) {
      const T deviation = (x[i] - head) - tail;
      sum += deviation * deviation;
    }
    total += static_cast<double>(sum);
  }
  return total;
}

// The problem's sizes and pointers, checked against the few things the op layer cannot have
// got wrong without a bug of its own.
// Gain-shaped operands (gain, bias, dgain, dbias), where given, have x's dtype and one value
// per column, or per channel in the spatial form.
inline void check_affine(std::initializer_list<const TensorRef*> operands, DType dtype,
                         std::int64_t expected, const char* what, const char* op) {
  for (const TensorRef* operand : operands) {
    if (operand == nullptr) continue;
    NG_CHECK(operand->dtype == dtype, op, what, " must be ", dtype, ", got ", operand->dtype);
    NG_CHECK(operand->numel() == expected, op, what, " need ", expected, " values, got ",
             operand->numel());
  }
}

template <typename T>
NormProblem<T> make_problem(const NormParams& params, const TensorRef& x, const TensorRef* gain,
                            const TensorRef* bias, const char* op) {
  NormProblem<T> problem;
  problem.n = x.rank() == 0 ? 1 : x.shape.back();
  problem.rows = problem.n == 0 ? 0 : x.numel() / problem.n;
  problem.k = params.centred ? problem.n : params.k;
  problem.divisor = params.divisor;
  problem.eps = params.eps;
  problem.eps_inside_sqrt = params.eps_inside_sqrt;
  problem.channels = params.channels;
  problem.x = x.ptr<const T>();
  problem.x_stride = norm_row_stride(x, problem.rows, problem.n, op, "x");
  problem.gain = gain != nullptr ? gain->ptr<const T>() : nullptr;
  problem.bias = bias != nullptr ? bias->ptr<const T>() : nullptr;
  NG_CHECK(problem.k >= 0 && problem.k <= problem.n, op, "k = ", problem.k, " must lie in [0, ",
           problem.n, "]");
  NG_CHECK(params.centred || params.divisor > 0, op, "divisor must be positive, got ",
           params.divisor);
  NG_CHECK(params.channels >= 0, op, "channels must be >= 0, got ", params.channels);
  check_affine({gain, bias}, x.dtype, params.channels > 0 ? params.channels : problem.n,
               "gain and bias", op);
  return problem;
}

}  // namespace normgrad::backend::cpu::norm_rows
