// The fused pointwise parts of GRU and LSTM time steps (backend.h gives the formulas). One
// step of a recurrent layer is a GEMM for the state side and then this: one pass over the
// pre-activations in place of a dozen elementwise ops, each with its own temporary. Rows are
// independent, so OpenMP splits them, and every row's arithmetic is the same for any thread
// count.

#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <utility>

#include "backends/bfloat16_widening.h"
#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/recurrent_gate_math.h"
#include "backends/cpu/strided_loop.h"
#include "backends/dtype_dispatch.h"
#include "backends/recurrent_checks.h"
#include "base/error.h"

namespace normgrad::backend::cpu {

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

}  // namespace normgrad::backend::cpu
