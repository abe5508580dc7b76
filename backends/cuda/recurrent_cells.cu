// The fused pointwise parts of GRU and LSTM time steps (backend.h gives the formulas), ported
// from backends/cpu/recurrent_cells.cpp. Every operand is a contiguous [B, k H] matrix, so one
// thread handles one (row, unit) pair: it reads that unit's gate pre-activations from each
// block of H columns, and writes the unit's activations, state and gradients. No two threads
// write the same element and nothing is summed across threads, so the results do not depend
// on the launch configuration.
//
// A row whose mask is 0 keeps its previous state (forward: activations are still written, as
// on the CPU) and passes its state gradient straight through (backward: zero gate gradients).

#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <utility>

#include "backends/cuda/gate_math.cuh"
#include "backends/cuda/launch.cuh"
#include "backends/cuda/recurrent_cells.h"
#include "backends/dtype_dispatch.h"
#include "backends/recurrent_checks.h"

namespace normgrad::backend::cuda {

namespace {

// Element e = row H + j of a [B, H] grid; `units` = H.
template <typename T>
__global__ void gru_forward_kernel(T* h, T* activations, const T* gx, const T* gh, const T* h_prev,
                                   const T* mask, std::int64_t rows, std::int64_t units) {
  NG_KERNEL_LOOP(e, rows * units) {
    const std::int64_t row = e / units, j = e % units;
    const std::int64_t gate = row * 3 * units + j;  // unit j of the reset block
    const T r = sigmoid(gx[gate] + gh[gate]);
    const T u = sigmoid(gx[gate + units] + gh[gate + units]);
    const T c = hyperbolic_tangent(gx[gate + 2 * units] + r * gh[gate + 2 * units]);
    activations[gate] = r;
    activations[gate + units] = u;
    activations[gate + 2 * units] = c;
    const T previous = h_prev[e];
    h[e] = takes_step(mask, row) ? c + u * (previous - c) : previous;
  }
}

// dc~ = d (1 - u) (1 - c^2); dgx_c = dc~, dgh_c = r dc~; dgx_r = dgh_r = dc~ gh_c r (1 - r);
// dgx_u = dgh_u = d (h_prev - c) u (1 - u); dh_prev = d u.
template <typename T>
__global__ void gru_backward_kernel(T* dgx, T* dgh, T* dh_prev, const T* dh, const T* activations,
                                    const T* gh, const T* h_prev, const T* mask, std::int64_t rows,
                                    std::int64_t units) {
  NG_KERNEL_LOOP(e, rows * units) {
    const std::int64_t row = e / units, j = e % units;
    const std::int64_t gate = row * 3 * units + j;
    const T d = dh[e];
    if (!takes_step(mask, row)) {
      for (int block = 0; block < 3; ++block)
        dgx[gate + block * units] = dgh[gate + block * units] = T(0);
      dh_prev[e] = d;
      continue;
    }
    const T r = activations[gate], u = activations[gate + units];
    const T c = activations[gate + 2 * units];
    const T candidate = d * (T(1) - u) * (T(1) - c * c);
    const T reset = candidate * gh[gate + 2 * units] * r * (T(1) - r);
    const T update = d * (h_prev[e] - c) * u * (T(1) - u);
    dgx[gate] = dgh[gate] = reset;
    dgx[gate + units] = dgh[gate + units] = update;
    dgx[gate + 2 * units] = candidate;
    dgh[gate + 2 * units] = candidate * r;
    dh_prev[e] = d * u;
  }
}

// c = sigmoid(f) c_prev + sigmoid(i) tanh(g); gates [B, 4H] = [i | f | g | o], activations
// [B, 3H] = [sigmoid(i) | sigmoid(f) | tanh(g)].
template <typename T>
__global__ void lstm_forward_kernel(T* c, T* activations, const T* gates, const T* c_prev,
                                    const T* mask, std::int64_t rows, std::int64_t units) {
  NG_KERNEL_LOOP(e, rows * units) {
    const std::int64_t row = e / units, j = e % units;
    const T* pre = gates + row * 4 * units + j;
    T* a = activations + row * 3 * units + j;
    const T i = sigmoid(pre[0]), f = sigmoid(pre[units]);
    const T g = hyperbolic_tangent(pre[2 * units]);
    a[0] = i;
    a[units] = f;
    a[2 * units] = g;
    const T previous = c_prev[e];
    c[e] = takes_step(mask, row) ? f * previous + i * g : previous;
  }
}

// di = dc g i (1 - i), df = dc c_prev f (1 - f), dg = dc i (1 - g^2), do = 0; dc_prev = dc f.
template <typename T>
__global__ void lstm_backward_kernel(T* dgates, T* dc_prev, const T* dc, const T* activations,
                                     const T* c_prev, const T* mask, std::int64_t rows,
                                     std::int64_t units) {
  NG_KERNEL_LOOP(e, rows * units) {
    const std::int64_t row = e / units, j = e % units;
    T* dpre = dgates + row * 4 * units + j;
    const T* a = activations + row * 3 * units + j;
    const T d = dc[e];
    dpre[3 * units] = T(0);
    if (!takes_step(mask, row)) {
      dpre[0] = dpre[units] = dpre[2 * units] = T(0);
      dc_prev[e] = d;
      continue;
    }
    const T i = a[0], f = a[units], g = a[2 * units];
    dpre[0] = d * g * i * (T(1) - i);
    dpre[units] = d * c_prev[e] * f * (T(1) - f);
    dpre[2 * units] = d * i * (T(1) - g * g);
    dc_prev[e] = d * f;
  }
}

}  // namespace

void gru_cell_forward(const Context& context, const TensorRef& h, const TensorRef& activations,
                      const TensorRef& gx, const TensorRef& gh, const TensorRef& h_prev,
                      const TensorRef* mask) {
  const char* op = "cuda gru_cell_forward";
  const auto [rows, H] = check_gru_forward(op, h, activations, gx, gh, h_prev, mask);
  if (rows * H == 0) return;
  dispatch_floating(h.dtype, op, [&](auto tag) {
    using T = typename decltype(tag)::type;
    gru_forward_kernel<T><<<grid_for(rows * H, context), threads_per_block, 0, context.stream>>>(
        h.ptr<T>(), activations.ptr<T>(), gx.ptr<const T>(), gh.ptr<const T>(),
        h_prev.ptr<const T>(), mask_data<T>(mask), rows, H);
    NG_CUDA_CHECK_LAUNCH();
  });
}

void gru_cell_backward(const Context& context, const TensorRef& dgx, const TensorRef& dgh,
                       const TensorRef& dh_prev, const TensorRef& dh, const TensorRef& activations,
                       const TensorRef& gh, const TensorRef& h_prev, const TensorRef* mask) {
  const char* op = "cuda gru_cell_backward";
  const auto [rows, H] =
      check_gru_backward(op, dgx, dgh, dh_prev, dh, activations, gh, h_prev, mask);
  if (rows * H == 0) return;
  dispatch_floating(dh.dtype, op, [&](auto tag) {
    using T = typename decltype(tag)::type;
    gru_backward_kernel<T><<<grid_for(rows * H, context), threads_per_block, 0, context.stream>>>(
        dgx.ptr<T>(), dgh.ptr<T>(), dh_prev.ptr<T>(), dh.ptr<const T>(), activations.ptr<const T>(),
        gh.ptr<const T>(), h_prev.ptr<const T>(), mask_data<T>(mask), rows, H);
    NG_CUDA_CHECK_LAUNCH();
  });
}

void lstm_cell_forward(const Context& context, const TensorRef& c, const TensorRef& activations,
                       const TensorRef& gates, const TensorRef& c_prev, const TensorRef* mask) {
  const char* op = "cuda lstm_cell_forward";
  const auto [rows, H] = check_lstm_forward(op, c, activations, gates, c_prev, mask);
  if (rows * H == 0) return;
  dispatch_floating(c.dtype, op, [&](auto tag) {
    using T = typename decltype(tag)::type;
    lstm_forward_kernel<T><<<grid_for(rows * H, context), threads_per_block, 0, context.stream>>>(
        c.ptr<T>(), activations.ptr<T>(), gates.ptr<const T>(), c_prev.ptr<const T>(),
        mask_data<T>(mask), rows, H);
    NG_CUDA_CHECK_LAUNCH();
  });
}

void lstm_cell_backward(const Context& context, const TensorRef& dgates, const TensorRef& dc_prev,
                        const TensorRef& dc, const TensorRef& activations, const TensorRef& c_prev,
                        const TensorRef* mask) {
  const char* op = "cuda lstm_cell_backward";
  const auto [rows, H] = check_lstm_backward(op, dgates, dc_prev, dc, activations, c_prev, mask);
  if (rows * H == 0) return;
  dispatch_floating(dc.dtype, op, [&](auto tag) {
    using T = typename decltype(tag)::type;
    lstm_backward_kernel<T><<<grid_for(rows * H, context), threads_per_block, 0, context.stream>>>(
        dgates.ptr<T>(), dc_prev.ptr<T>(), dc.ptr<const T>(), activations.ptr<const T>(),
        c_prev.ptr<const T>(), mask_data<T>(mask), rows, H);
    NG_CUDA_CHECK_LAUNCH();
  });
}

}  // namespace normgrad::backend::cuda
