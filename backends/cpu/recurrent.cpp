// The recurrent family's CPU kernels (backend.h gives the formulas and contracts): the fused
// pointwise parts of GRU and LSTM time steps, the GRU step with its state side's norms, and the
// whole LSTM step after its GEMM with its norms. One step of a recurrent layer is a GEMM for the
// state side and then one of these: one pass over the pre-activations in place of a dozen
// elementwise ops, each with its own temporary. Rows are independent, so OpenMP splits them,
// and every row's arithmetic is the same for any thread count.

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <utility>
#include <vector>

#include "backends/bfloat16_widening.h"
#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/kept_scratch.h"
#include "backends/cpu/norm_rows.h"
#include "backends/cpu/row_kernel.h"
#include "backends/cpu/simd/vector_exp.h"
#include "backends/cpu/strided_loop.h"
#include "backends/dtype_dispatch.h"
#include "backends/fused_row_norm.h"
#include "backends/recurrent_checks.h"
#include "base/dtype.h"
#include "base/error.h"

namespace normgrad::backend::cpu {

// ---- activations and the mask ------------------------------------------------------------------
// The activations in place over a unit-stride run (float32 through the vector kernels of
// vector_exp.h, float64 value by value), and the mask test.

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

// ---- GRU and LSTM cells ------------------------------------------------------------------------

void CpuBackend::gru_cell_forward(const TensorRef& h, const TensorRef& activations,
                                  const TensorRef& gx, const TensorRef& gh, const TensorRef& h_prev,
                                  const TensorRef* mask) {
  if (any_bfloat16({&h, &gx, &gh, &h_prev})) {
    Float32Copies f(*this);
    gru_cell_forward(f.output(h), f.output(activations), f.input(gx), f.input(gh), f.input(h_prev),
                     f.input(mask));
    return f.finish();
  }
  const char* op = "cpu gru_cell_forward";
  const StepExtent extent = check_gru_forward(op, h, activations, gx, gh, h_prev, mask);
  const std::int64_t rows = extent.rows, H = extent.units;  // named, so lambdas capture them
  dispatch_floating(h.dtype, op, [&](auto tag) {
    using T = typename decltype(tag)::type;
    parallel_for(rows, 12 * H, [&](std::int64_t begin, std::int64_t end) {
      for (std::int64_t row = begin; row < end; ++row) {
        const T* x = gx.ptr<const T>() + row * 3 * H;
        const T* s = gh.ptr<const T>() + row * 3 * H;
        const T* previous = h_prev.ptr<const T>() + row * H;
        T* a = activations.ptr<T>() + row * 3 * H;  // [r | u | c]
        T* out = h.ptr<T>() + row * H;
#pragma omp simd
        for (std::int64_t j = 0; j < 2 * H; ++j) a[j] = x[j] + s[j];
        sigmoid_in_place(a, 2 * H);
#pragma omp simd
        for (std::int64_t j = 0; j < H; ++j) a[2 * H + j] = x[2 * H + j] + a[j] * s[2 * H + j];
        tanh_in_place(a + 2 * H, H);
        if (!takes_step(mask ? mask->ptr<const T>() : nullptr, row)) {
          for (std::int64_t j = 0; j < H; ++j) out[j] = previous[j];
          continue;
        }
#pragma omp simd
        for (std::int64_t j = 0; j < H; ++j) {
          const T u = a[H + j], c = a[2 * H + j];
          out[j] = c + u * (previous[j] - c);
        }
      }
    });
  });
}

void CpuBackend::gru_cell_backward(const TensorRef& dgx, const TensorRef& dgh,
                                   const TensorRef& dh_prev, const TensorRef& dh,
                                   const TensorRef& activations, const TensorRef& gh,
                                   const TensorRef& h_prev, const TensorRef* mask) {
  if (any_bfloat16({&dh, &gh, &h_prev, &dgx})) {
    Float32Copies f(*this);
    gru_cell_backward(f.output(dgx), f.output(dgh), f.output(dh_prev), f.input(dh),
                      f.input(activations), f.input(gh), f.input(h_prev), f.input(mask));
    return f.finish();
  }
  const char* op = "cpu gru_cell_backward";
  const StepExtent extent =
      check_gru_backward(op, dgx, dgh, dh_prev, dh, activations, gh, h_prev, mask);
  const std::int64_t rows = extent.rows, H = extent.units;  // named, so lambdas capture them
  dispatch_floating(dh.dtype, op, [&](auto tag) {
    using T = typename decltype(tag)::type;
    parallel_for(rows, 16 * H, [&](std::int64_t begin, std::int64_t end) {
      for (std::int64_t row = begin; row < end; ++row) {
        const T* d = dh.ptr<const T>() + row * H;
        const T* a = activations.ptr<const T>() + row * 3 * H;
        const T* s = gh.ptr<const T>() + row * 3 * H;
        const T* previous = h_prev.ptr<const T>() + row * H;
        T* dx = dgx.ptr<T>() + row * 3 * H;
        T* ds = dgh.ptr<T>() + row * 3 * H;
        T* dprevious = dh_prev.ptr<T>() + row * H;
        if (!takes_step(mask ? mask->ptr<const T>() : nullptr, row)) {
          for (std::int64_t j = 0; j < 3 * H; ++j) dx[j] = ds[j] = T(0);
          for (std::int64_t j = 0; j < H; ++j) dprevious[j] = d[j];
          continue;
        }
#pragma omp simd
        for (std::int64_t j = 0; j < H; ++j) {
          const T r = a[j], u = a[H + j], c = a[2 * H + j];
          const T candidate = d[j] * (T(1) - u) * (T(1) - c * c);
          const T reset = candidate * s[2 * H + j] * r * (T(1) - r);
          const T update = d[j] * (previous[j] - c) * u * (T(1) - u);
          dx[j] = ds[j] = reset;
          dx[H + j] = ds[H + j] = update;
          dx[2 * H + j] = candidate;
          ds[2 * H + j] = candidate * r;
          dprevious[j] = d[j] * u;
        }
      }
    });
  });
}

void CpuBackend::lstm_cell_forward(const TensorRef& c, const TensorRef& activations,
                                   const TensorRef& gates, const TensorRef& c_prev,
                                   const TensorRef* mask) {
  if (any_bfloat16({&c, &gates, &c_prev})) {
    Float32Copies f(*this);
    lstm_cell_forward(f.output(c), f.output(activations), f.input(gates), f.input(c_prev),
                      f.input(mask));
    return f.finish();
  }
  const char* op = "cpu lstm_cell_forward";
  const StepExtent extent = check_lstm_forward(op, c, activations, gates, c_prev, mask);
  const std::int64_t rows = extent.rows, H = extent.units;  // named, so lambdas capture them
  dispatch_floating(c.dtype, op, [&](auto tag) {
    using T = typename decltype(tag)::type;
    parallel_for(rows, 10 * H, [&](std::int64_t begin, std::int64_t end) {
      for (std::int64_t row = begin; row < end; ++row) {
        const T* pre = gates.ptr<const T>() + row * 4 * H;
        const T* previous = c_prev.ptr<const T>() + row * H;
        T* a = activations.ptr<T>() + row * 3 * H;  // [sigmoid(i) | sigmoid(f) | tanh(g)]
        T* out = c.ptr<T>() + row * H;
        for (std::int64_t j = 0; j < 3 * H; ++j) a[j] = pre[j];
        sigmoid_in_place(a, 2 * H);
        tanh_in_place(a + 2 * H, H);
        if (!takes_step(mask ? mask->ptr<const T>() : nullptr, row)) {
          for (std::int64_t j = 0; j < H; ++j) out[j] = previous[j];
          continue;
        }
#pragma omp simd
        for (std::int64_t j = 0; j < H; ++j) out[j] = a[H + j] * previous[j] + a[j] * a[2 * H + j];
      }
    });
  });
}

void CpuBackend::lstm_cell_backward(const TensorRef& dgates, const TensorRef& dc_prev,
                                    const TensorRef& dc, const TensorRef& activations,
                                    const TensorRef& c_prev, const TensorRef* mask) {
  if (any_bfloat16({&dc, &c_prev, &dgates})) {
    Float32Copies f(*this);
    lstm_cell_backward(f.output(dgates), f.output(dc_prev), f.input(dc), f.input(activations),
                       f.input(c_prev), f.input(mask));
    return f.finish();
  }
  const char* op = "cpu lstm_cell_backward";
  const StepExtent extent = check_lstm_backward(op, dgates, dc_prev, dc, activations, c_prev, mask);
  const std::int64_t rows = extent.rows, H = extent.units;  // named, so lambdas capture them
  dispatch_floating(dc.dtype, op, [&](auto tag) {
    using T = typename decltype(tag)::type;
    parallel_for(rows, 12 * H, [&](std::int64_t begin, std::int64_t end) {
      for (std::int64_t row = begin; row < end; ++row) {
        const T* d = dc.ptr<const T>() + row * H;
        const T* a = activations.ptr<const T>() + row * 3 * H;
        const T* previous = c_prev.ptr<const T>() + row * H;
        T* dpre = dgates.ptr<T>() + row * 4 * H;
        T* dprevious = dc_prev.ptr<T>() + row * H;
        for (std::int64_t j = 3 * H; j < 4 * H; ++j) dpre[j] = T(0);
        if (!takes_step(mask ? mask->ptr<const T>() : nullptr, row)) {
          for (std::int64_t j = 0; j < 3 * H; ++j) dpre[j] = T(0);
          for (std::int64_t j = 0; j < H; ++j) dprevious[j] = d[j];
          continue;
        }
#pragma omp simd
        for (std::int64_t j = 0; j < H; ++j) {
          const T i = a[j], f = a[H + j], g = a[2 * H + j];
          dpre[j] = d[j] * g * i * (T(1) - i);
          dpre[H + j] = d[j] * previous[j] * f * (T(1) - f);
          dpre[2 * H + j] = d[j] * i * (T(1) - g * g);
          dprevious[j] = d[j] * f;
        }
      }
    });
  });
}

// ---- the GRU step with its state norms ---------------------------------------------------------
// The two norms of the state-side projection, then the step, all inside one backend call. On
// the CPU this call is the reference the CUDA kernel is held to, built from the kernels it
// fuses: norm_forward on each block of gh where it lies (strided rows, no copy), then
// gru_cell_forward on the normalised gh; backward, gru_cell_backward into a scratch gradient of
// the normalised gh, then norm_backward on each block. A row of 3H values stays in cache from one
// kernel to the next, and a CPU has no launches to save, so separate passes cost little here;
// what the call spares the op layer is the split of gh, the two norms' outputs and their cat.

namespace {

// Columns [first, first + width) of a contiguous [rows, 3H] operand: rows `stride` apart. An
// operand of no rows may have no memory at all (a null pointer, which takes no offset).
TensorRef block_columns(const TensorRef& operand, std::int64_t first, std::int64_t width) {
  const std::int64_t rows = operand.shape[0], stride = operand.shape[1];
  TensorRef view = operand;
  if (operand.data != nullptr)
    view.data = static_cast<std::byte*>(operand.data) +
                first * static_cast<std::int64_t>(element_size(operand.dtype));
  view.shape = {rows, width};
  view.strides = {stride, 1};
  return view;
}

// Row `index` of the contiguous [4, rows] statistics.
TensorRef statistic_row(const TensorRef& statistics, std::int64_t index) {
  const std::int64_t rows = statistics.shape[1];
  TensorRef view = statistics;
  view.data = static_cast<std::byte*>(statistics.data) +
              index * rows * static_cast<std::int64_t>(element_size(statistics.dtype));
  view.shape = {rows};
  view.strides = {1};
  return view;
}

// The purpose of the normed GRU backward's kept scratch (kept_scratch.h): the gradient of the
// normalised gh, kept up to 16 MiB (a fresh allocation of this size would be page-faulted in
// on every step).
enum class GruScratch { NormalisedGradient };
constexpr std::size_t gru_scratch_bytes = std::size_t{16} << 20;

}  // namespace

void CpuBackend::normed_gru_cell_forward(const GruStateNorms& norms, const TensorRef& h,
                                         const TensorRef& activations, const TensorRef& normalised,
                                         const TensorRef& statistics, const TensorRef& gx,
                                         const TensorRef& gh, const TensorRef& h_prev,
                                         const TensorRef* mask) {
  if (any_bfloat16({&h, &gx, &gh, &h_prev})) {
    Float32Copies f(*this);
    normed_gru_cell_forward(f.input(norms), f.output(h), f.output(activations),
                            f.output(normalised), f.output(statistics), f.input(gx), f.input(gh),
                            f.input(h_prev), f.input(mask));
    return f.finish();
  }
  const char* op = "cpu normed_gru_cell_forward";
  const auto [rows, H] = check_normed_gru_forward(op, norms, h, activations, normalised, statistics,
                                                  gx, gh, h_prev, mask);
  if (rows * H == 0) return;
  norm_forward(norms.gates, block_columns(normalised, 0, 2 * H), statistic_row(statistics, 0),
               statistic_row(statistics, 1), block_columns(gh, 0, 2 * H), norms.gates_gain,
               norms.gates_bias);
  norm_forward(norms.candidate, block_columns(normalised, 2 * H, H), statistic_row(statistics, 2),
               statistic_row(statistics, 3), block_columns(gh, 2 * H, H), norms.candidate_gain,
               norms.candidate_bias);
  gru_cell_forward(h, activations, gx, normalised, h_prev, mask);
}

void CpuBackend::normed_gru_cell_backward(const GruStateNorms& norms, const TensorRef& dgx,
                                          const TensorRef& dgh, const TensorRef& dh_prev,
                                          const GruStateNormGrads& affine, const TensorRef& dh,
                                          const TensorRef& activations, const TensorRef& normalised,
                                          const TensorRef& statistics, const TensorRef& gh,
                                          const TensorRef& h_prev, const TensorRef* mask) {
  if (any_bfloat16({&dh, &gh, &h_prev, &dgx})) {
    Float32Copies f(*this);
    normed_gru_cell_backward(f.input(norms), f.output(dgx), f.output(dgh), f.output(dh_prev),
                             f.output(affine), f.input(dh), f.input(activations),
                             f.input(normalised), f.input(statistics), f.input(gh), f.input(h_prev),
                             f.input(mask));
    return f.finish();
  }
  const char* op = "cpu normed_gru_cell_backward";
  const auto [rows, H] =
      check_normed_gru_backward(op, norms, dgx, dgh, dh_prev, affine, dh, activations, normalised,
                                statistics, gh, h_prev, mask);
  std::vector<double> fallback;  // scratch in doubles, holding values of dgh's dtype
  const std::size_t bytes = static_cast<std::size_t>(rows * 3 * H) * element_size(dgh.dtype);
  TensorRef dnormalised = dgh;  // the gradient of the normalised gh, in scratch memory
  dnormalised.data = kept_scratch<double, GruScratch::NormalisedGradient, gru_scratch_bytes>(
      (bytes + sizeof(double) - 1) / sizeof(double), fallback);
  gru_cell_backward(dgx, dnormalised, dh_prev, dh, activations, normalised, h_prev, mask);
  norm_backward(norms.gates, block_columns(dgh, 0, 2 * H), affine.gates_gain, affine.gates_bias,
                block_columns(dnormalised, 0, 2 * H), block_columns(gh, 0, 2 * H),
                statistic_row(statistics, 0), statistic_row(statistics, 1), norms.gates_gain);
  norm_backward(norms.candidate, block_columns(dgh, 2 * H, H), affine.candidate_gain,
                affine.candidate_bias, block_columns(dnormalised, 2 * H, H),
                block_columns(gh, 2 * H, H), statistic_row(statistics, 2),
                statistic_row(statistics, 3), norms.candidate_gain);
}

// ---- the LSTM step with its norms --------------------------------------------------------------
// Row by row, the state norm's statistic, the gates, the cell state, the cell norm and the
// output, and the reverse backward, each a loop the compiler vectorises over a row that stays in
// cache (the activations through vector_exp.h). The norms' formulas and coefficients are those
// of backends/fused_row_norm.h, which the CUDA kernel uses too; here the sums are taken as the
// CPU's norm kernels take them (norm_rows.h: the data's type within blocks of 256 values, the
// blocks in double) and the values in the data's type.
//
// Rows are independent and spread over threads. The gains' and biases' gradients are sums over
// rows: each row writes its products (dy ŷ and dy) to scratch memory, and the columns are then
// summed in row order, so no result depends on the thread count.

namespace {

// The purpose of the backward pass's kept scratch (kept_scratch.h).
enum class LstmScratch { GainProducts };

// One of the step's norms over rows of n values: its kernel form (fused_row_norm.h), and the
// row loops below, which the compiler vectorises.
template <typename T> struct StepNorm {
  bool applied = false;
  FusedRowNorm<T> form;
  std::int64_t n = 0;

  // The statistic of row a: the mean as saved (rounded to T, `head`), the rest of it (`tail`)
  // and 1 / r. LayerNorm's mean is summed as deviations from the row's first value and its
  // variance from the mean, never as E[a^2] - E[a]^2.
  void statistic(const T* a, T& head, T& tail, T& inverse_r) const {
    double sum = 0;
    if (form.centred) {
      const double mean = double(a[0]) + norm_rows::sum_of_deviations(a, n, a[0]) / double(n);
      head = T(mean);
      tail = T(mean - double(head));
      sum = norm_rows::sum_of_squared_deviations(a, n, head, tail);
    } else {
      head = tail = T(0);
      sum = norm_rows::sum_of_squares(a, form.k);
    }
    inverse_r = T(form.inverse_r(sum, n));
  }

  // y = g ((a - head) - tail) / r + b.
  void normalise(T* y, const T* a, T head, T tail, T inverse_r) const {
    const T* gain = gain_or_ones();
    const T* bias = bias_or_zeros();
#pragma omp simd
    for (std::int64_t i = 0; i < n; ++i)
      y[i] = ((a[i] - head) - tail) * inverse_r * gain[i] + bias[i];
  }

  // da from dy for row a (fused_row_norm.h's formulas), and the row's products dy ŷ and dy for
  // the gain's and bias's sums (where `gain_products` is not null).
  void backward(T* da, const T* dy, const T* a, T head, T inverse_r, T* gain_products,
                T* bias_products) const {
    const T* gain = gain_or_ones();
    // Row sums in T lanes over blocks of norm_rows::lane_block values, the blocks in double.
    double sums[3] = {0, 0, 0};
    for (std::int64_t first = 0; first < n; first += norm_rows::lane_block) {
      const std::int64_t last = std::min(n, first + norm_rows::lane_block);
      T s0 = 0, s1 = 0, s2 = 0;
      if (form.centred) {
#pragma omp simd reduction(+ : s0, s1, s2)
        for (std::int64_t i = first; i < last; ++i) {
          const T dyhat = gain[i] * dy[i];
          const T deviation = a[i] - head;
          s0 += dyhat;
          s1 += dyhat * deviation;
          s2 += deviation;
        }
      } else {
#pragma omp simd reduction(+ : s0)
        for (std::int64_t i = first; i < last; ++i) s0 += gain[i] * dy[i] * a[i];
      }
      sums[0] += double(s0);
      sums[1] += double(s1);
      sums[2] += double(s2);
    }
    const backend::RowCoefficients co = coefficients(form, sums, n, double(head), double(inverse_r));
    const T r = T(co.inverse_r);
    if (form.centred) {
      const T mean_dyhat = T(co.mean_dyhat), mean_dyhat_yhat = T(co.mean_dyhat_yhat);
      const T co_head = T(co.head), co_tail = T(co.tail);
#pragma omp simd
      for (std::int64_t i = 0; i < n; ++i) {
        const T yhat = ((a[i] - co_head) - co_tail) * r;
        da[i] = (gain[i] * dy[i] - mean_dyhat - yhat * mean_dyhat_yhat) * r;
      }
    } else {
      const T correction = T(co.correction);
#pragma omp simd
      for (std::int64_t i = 0; i < form.k; ++i) da[i] = gain[i] * dy[i] * r - a[i] * correction;
#pragma omp simd
      for (std::int64_t i = form.k; i < n; ++i) da[i] = gain[i] * dy[i] * r;
    }
    if (gain_products == nullptr) return;
    const T co_head = T(co.head), co_tail = T(co.tail);
#pragma omp simd
    for (std::int64_t i = 0; i < n; ++i) {
      gain_products[i] = dy[i] * ((a[i] - co_head) - co_tail) * r;  // dy ŷ (head, tail 0: RMS)
      bias_products[i] = dy[i];
    }
  }

 private:
  // The gain and bias, or ones and zeros where the norm has none, so that the loops above
  // carry no branch.
  const T* gain_or_ones() const {
    if (form.gain != nullptr) return form.gain;
    thread_local std::vector<T> ones;
    if (static_cast<std::int64_t>(ones.size()) < n) ones.assign(static_cast<std::size_t>(n), T(1));
    return ones.data();
  }
  const T* bias_or_zeros() const {
    if (form.bias != nullptr) return form.bias;
    thread_local std::vector<T> zeros;
    if (static_cast<std::int64_t>(zeros.size()) < n)
      zeros.assign(static_cast<std::size_t>(n), T(0));
    return zeros.data();
  }
};

template <typename T> struct StepNorms { StepNorm<T> state, cell; };

template <typename T> StepNorms<T> step_norms(const LstmStepNorms& norms, std::int64_t H) {
  return {
      {norms.normalise_state, fused_row_norm<T>(norms.state, norms.state_gain, norms.state_bias),
       4 * H},
      {norms.normalise_cell, fused_row_norm<T>(norms.cell, norms.cell_gain, norms.cell_bias), H}};
}

// Scratch rows for one thread, kept between calls.
template <typename T> T* row_scratch(std::size_t count) {
  thread_local std::vector<T> buffer;
  if (buffer.size() < count) buffer.resize(count);
  return buffer.data();
}

template <typename T>
void forward_row(const StepNorms<T>& norms, std::int64_t row, std::int64_t rows, std::int64_t H,
                 T* state, T* activations, T* cell, T* statistics, const T* gx, const T* gh,
                 const T* h_prev, const T* c_prev, const T* mask) {
  const T* x = gx + row * 4 * H;
  const T* p = gh + row * 4 * H;
  T* a = activations + row * 4 * H;
  T* h = state + row * 2 * H;
  T* c = h + H;
  T* n = cell + row * H;
  const T* previous_c = c_prev + row * H;
  T state_head = 0, state_tail = 0, state_inverse_r = 1;
  T cell_head = 0, cell_tail = 0, cell_inverse_r = 1;
  if (norms.state.applied) {
    norms.state.statistic(p, state_head, state_tail, state_inverse_r);
    norms.state.normalise(a, p, state_head, state_tail, state_inverse_r);
#pragma omp simd
    for (std::int64_t k = 0; k < 4 * H; ++k) a[k] += x[k];
  } else {
#pragma omp simd
    for (std::int64_t k = 0; k < 4 * H; ++k) a[k] = x[k] + p[k];
  }
  sigmoid_in_place(a, 2 * H);
  tanh_in_place(a + 2 * H, H);
  sigmoid_in_place(a + 3 * H, H);
#pragma omp simd
  for (std::int64_t j = 0; j < H; ++j) c[j] = a[H + j] * previous_c[j] + a[j] * a[2 * H + j];
  if (norms.cell.applied) {
    norms.cell.statistic(c, cell_head, cell_tail, cell_inverse_r);
    norms.cell.normalise(n, c, cell_head, cell_tail, cell_inverse_r);
  } else {
    for (std::int64_t j = 0; j < H; ++j) n[j] = c[j];
  }
  for (std::int64_t j = 0; j < H; ++j) h[j] = n[j];
  tanh_in_place(h, H);
#pragma omp simd
  for (std::int64_t j = 0; j < H; ++j) h[j] *= a[3 * H + j];
  if (!takes_step(mask, row))
    for (std::int64_t j = 0; j < H; ++j) {
      h[j] = h_prev[row * H + j];
      c[j] = previous_c[j];
    }
  statistics[row] = state_head;
  statistics[rows + row] = state_inverse_r;
  statistics[2 * rows + row] = cell_head;
  statistics[3 * rows + row] = cell_inverse_r;
}

template <typename T> struct BackwardRow {
  T* dgx;
  T* dgh;
  T* dh_prev;
  T* dc_prev;
  T* products;  // null, or [rows, 2, 5H]: dy ŷ then dy, the state norm's 4H then the cell's H
  const T* dstate;
  const T* state;
  const T* activations;
  const T* cell;
  const T* statistics;
  const T* gh;
  const T* c_prev;
  const T* mask;
  std::int64_t rows, units;
};

template <typename T>
void backward_row(const StepNorms<T>& norms, const BackwardRow<T>& b, std::int64_t row) {
  const std::int64_t H = b.units;
  T* dx = b.dgx + row * 4 * H;
  T* dp = b.dgh + row * 4 * H;
  T* products = b.products ? b.products + row * 10 * H : nullptr;
  const T* dh = b.dstate + row * 2 * H;
  const T* dc = dh + H;
  T* dh_prev = b.dh_prev + row * H;
  T* dc_prev = b.dc_prev + row * H;
  if (!takes_step(b.mask, row)) {
    for (std::int64_t k = 0; k < 4 * H; ++k) dx[k] = dp[k] = T(0);
    for (std::int64_t j = 0; j < H; ++j) {
      dh_prev[j] = dh[j];
      dc_prev[j] = dc[j];
    }
    if (products)
      for (std::int64_t k = 0; k < 10 * H; ++k) products[k] = T(0);
    return;
  }
  const T* a = b.activations + row * 4 * H;
  const T* c = b.state + row * 2 * H + H;
  const T* previous_c = b.c_prev + row * H;
  // t = tanh(n), then dn = dh o (1 - t^2); dc' = dc + the cell norm's backward of dn.
  T* t = row_scratch<T>(static_cast<std::size_t>(3 * H));
  T* dn = t + H;
  T* dcell = dn + H;
  for (std::int64_t j = 0; j < H; ++j) t[j] = b.cell[row * H + j];
  tanh_in_place(t, H);
#pragma omp simd
  for (std::int64_t j = 0; j < H; ++j) dn[j] = dh[j] * a[3 * H + j] * (T(1) - t[j] * t[j]);
  if (norms.cell.applied)
    norms.cell.backward(dcell, dn, c, b.statistics[2 * b.rows + row],
                        b.statistics[3 * b.rows + row], products ? products + 4 * H : nullptr,
                        products ? products + 9 * H : nullptr);
  else
    for (std::int64_t j = 0; j < H; ++j) dcell[j] = dn[j];
#pragma omp simd
  for (std::int64_t j = 0; j < H; ++j) {
    const T d = dc[j] + dcell[j];
    const T i = a[j], f = a[H + j], g = a[2 * H + j], o = a[3 * H + j];
    dx[j] = d * g * i * (T(1) - i);
    dx[H + j] = d * previous_c[j] * f * (T(1) - f);
    dx[2 * H + j] = d * i * (T(1) - g * g);
    dx[3 * H + j] = dh[j] * t[j] * o * (T(1) - o);
    dc_prev[j] = d * f;
    dh_prev[j] = T(0);
  }
  if (norms.state.applied)
    norms.state.backward(dp, dx, b.gh + row * 4 * H, b.statistics[row], b.statistics[b.rows + row],
                         products, products ? products + 5 * H : nullptr);
  else
    for (std::int64_t k = 0; k < 4 * H; ++k) dp[k] = dx[k];
}

// Rows [begin, end), the loops compiled for AVX2 and for baseline x86-64 (row_kernel.h).
template <typename T>
NORMGRAD_ROW_KERNEL void lstm_forward_rows(const StepNorms<T>& norms, std::int64_t begin,
                                           std::int64_t end, std::int64_t rows, std::int64_t H,
                                           T* state, T* activations, T* cell, T* statistics,
                                           const T* gx, const T* gh, const T* h_prev,
                                           const T* c_prev, const T* mask) {
  for (std::int64_t row = begin; row < end; ++row)
    forward_row(norms, row, rows, H, state, activations, cell, statistics, gx, gh, h_prev, c_prev,
                mask);
}

template <typename T>
NORMGRAD_ROW_KERNEL void lstm_backward_rows(const StepNorms<T>& norms, const BackwardRow<T>& b,
                                            std::int64_t begin, std::int64_t end) {
  for (std::int64_t row = begin; row < end; ++row) backward_row(norms, b, row);
}

}  // namespace

void CpuBackend::lstm_step_forward(const LstmStepNorms& norms, const TensorRef& state,
                                   const TensorRef& activations, const TensorRef& cell,
                                   const TensorRef& statistics, const TensorRef& gx,
                                   const TensorRef& gh, const TensorRef& h_prev,
                                   const TensorRef& c_prev, const TensorRef* mask) {
  if (any_bfloat16({&state, &gx, &gh, &h_prev, &c_prev})) {
    Float32Copies f(*this);
    lstm_step_forward(f.input(norms), f.output(state), f.output(activations), f.output(cell),
                      f.output(statistics), f.input(gx), f.input(gh), f.input(h_prev),
                      f.input(c_prev), f.input(mask));
    return f.finish();
  }
  const char* op = "cpu lstm_step_forward";
  // Plain variables, not a structured binding: the lambdas below capture them, which clang
  // allows for bindings only from version 16.
  const StepExtent extent = check_lstm_step_forward(op, norms, state, activations, cell, statistics,
                                                    gx, gh, h_prev, c_prev, mask);
  const std::int64_t rows = extent.rows, H = extent.units;
  if (rows * H == 0) return;
  const std::int64_t units = H;
  dispatch_floating(cell.dtype, op, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const StepNorms<T> step = step_norms<T>(norms, units);
    const T* mask_values = mask ? mask->ptr<const T>() : nullptr;
    parallel_for(rows, 30 * units, [&](std::int64_t begin, std::int64_t end) {
      lstm_forward_rows(step, begin, end, rows, units, state.ptr<T>(), activations.ptr<T>(),
                        cell.ptr<T>(), statistics.ptr<T>(), gx.ptr<const T>(), gh.ptr<const T>(),
                        h_prev.ptr<const T>(), c_prev.ptr<const T>(), mask_values);
    });
  });
}

void CpuBackend::lstm_step_backward(const LstmStepNorms& norms, const TensorRef& dgx,
                                    const TensorRef& dgh, const TensorRef& dh_prev,
                                    const TensorRef& dc_prev, const LstmStepNormGrads& affine,
                                    const TensorRef& dstate, const TensorRef& state,
                                    const TensorRef& activations, const TensorRef& cell,
                                    const TensorRef& statistics, const TensorRef& gh,
                                    const TensorRef& c_prev, const TensorRef* mask) {
  if (any_bfloat16({&dstate, &gh, &c_prev, &dgx})) {
    Float32Copies f(*this);
    lstm_step_backward(f.input(norms), f.output(dgx), f.output(dgh), f.output(dh_prev),
                       f.output(dc_prev), f.output(affine), f.input(dstate), f.input(state),
                       f.input(activations), f.input(cell), f.input(statistics), f.input(gh),
                       f.input(c_prev), f.input(mask));
    return f.finish();
  }
  const char* op = "cpu lstm_step_backward";
  const StepExtent extent =
      check_lstm_step_backward(op, norms, dgx, dgh, dh_prev, dc_prev, affine, dstate, state,
                               activations, cell, statistics, gh, c_prev, mask);
  const std::int64_t rows = extent.rows, H = extent.units;  // captured below, as above
  if (H == 0) return;
  const bool wants_affine =
      affine.state_gain || affine.state_bias || affine.cell_gain || affine.cell_bias;
  dispatch_floating(cell.dtype, op, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const StepNorms<T> step = step_norms<T>(norms, H);
    // Every row writes all the columns that are summed into a wanted gradient, so the kept
    // scratch needs no clearing.
    std::vector<T> fallback;
    T* products = wants_affine ? kept_scratch<T, LstmScratch::GainProducts>(
                                     static_cast<std::size_t>(rows * 10 * H), fallback)
                               : nullptr;
    const BackwardRow<T> b{dgx.ptr<T>(),
                           dgh.ptr<T>(),
                           dh_prev.ptr<T>(),
                           dc_prev.ptr<T>(),
                           products,
                           dstate.ptr<const T>(),
                           state.ptr<const T>(),
                           activations.ptr<const T>(),
                           cell.ptr<const T>(),
                           statistics.ptr<const T>(),
                           gh.ptr<const T>(),
                           c_prev.ptr<const T>(),
                           mask ? mask->ptr<const T>() : nullptr,
                           rows,
                           H};
    parallel_for(rows, 40 * H, [&](std::int64_t begin, std::int64_t end) {
      lstm_backward_rows(step, b, begin, end);
    });
    if (!wants_affine) return;
    // Column sums in row order: state gain/bias over columns [0, 4H), cell's over [4H, 5H).
    const std::int64_t width = 5 * H;
    std::vector<double> gain_sums(static_cast<std::size_t>(width), 0.0), bias_sums = gain_sums;
    for (std::int64_t row = 0; row < rows; ++row) {
      const T* source = products + row * 2 * width;
      for (std::int64_t column = 0; column < width; ++column) {
        gain_sums[column] += double(source[column]);
        bias_sums[column] += double(source[width + column]);
      }
    }
    const auto write = [&](const TensorRef* out, const std::vector<double>& sums,
                           std::int64_t first, std::int64_t count) {
      if (out == nullptr) return;
      for (std::int64_t i = 0; i < count; ++i) out->ptr<T>()[i] = T(sums[first + i]);
    };
    write(affine.state_gain, gain_sums, 0, 4 * H);
    write(affine.state_bias, bias_sums, 0, 4 * H);
    write(affine.cell_gain, gain_sums, 4 * H, H);
    write(affine.cell_bias, bias_sums, 4 * H, H);
  });
}

}  // namespace normgrad::backend::cpu
