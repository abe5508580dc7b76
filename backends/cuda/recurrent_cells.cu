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

#include "backends/compute_type.h"
#include "backends/cuda/cuda_backend.h"
#include "backends/cuda/device_guard.h"
#include "backends/cuda/recurrent_gate_math.cuh"
#include "backends/cuda/launch.cuh"
#include "backends/dtype_dispatch.h"
#include "backends/recurrent_checks.h"

namespace normgrad::backend::cuda {

namespace {

// Each kernel stores S and computes in T = compute_t<S>: a bfloat16 operand is widened as it is
// loaded and every output rounded once as it is stored, which is what the float32 kernel gives
// on the same values (backends/compute_type.h). No kernel reads back what it wrote.

// Element e = row H + j of a [B, H] grid; `units` = H.
template <typename S, typename T = compute_t<S>>
__global__ void gru_forward_kernel(S* h, S* activations, const S* gx, const S* gh, const S* h_prev,
                                   const S* mask, std::int64_t rows, std::int64_t units) {
  NG_KERNEL_LOOP(e, rows * units) {
    const std::int64_t row = e / units, j = e % units;
    const std::int64_t gate = row * 3 * units + j;  // unit j of the reset block
    const auto at = [](const S* operand, std::int64_t i) { return static_cast<T>(operand[i]); };
    const T r = sigmoid(at(gx, gate) + at(gh, gate));
    const T u = sigmoid(at(gx, gate + units) + at(gh, gate + units));
    const T c = hyperbolic_tangent(at(gx, gate + 2 * units) + r * at(gh, gate + 2 * units));
    activations[gate] = static_cast<S>(r);
    activations[gate + units] = static_cast<S>(u);
    activations[gate + 2 * units] = static_cast<S>(c);
    const T previous = at(h_prev, e);
    h[e] = static_cast<S>(takes_step(mask, row) ? c + u * (previous - c) : previous);
  }
}

// dc~ = d (1 - u) (1 - c^2); dgx_c = dc~, dgh_c = r dc~; dgx_r = dgh_r = dc~ gh_c r (1 - r);
// dgx_u = dgh_u = d (h_prev - c) u (1 - u); dh_prev = d u.
template <typename S, typename T = compute_t<S>>
__global__ void gru_backward_kernel(S* dgx, S* dgh, S* dh_prev, const S* dh, const S* activations,
                                    const S* gh, const S* h_prev, const S* mask, std::int64_t rows,
                                    std::int64_t units) {
  NG_KERNEL_LOOP(e, rows * units) {
    const std::int64_t row = e / units, j = e % units;
    const std::int64_t gate = row * 3 * units + j;
    const auto at = [](const S* operand, std::int64_t i) { return static_cast<T>(operand[i]); };
    const T d = at(dh, e);
    if (!takes_step(mask, row)) {
      for (int block = 0; block < 3; ++block)
        dgx[gate + block * units] = dgh[gate + block * units] = S(0);
      dh_prev[e] = dh[e];
      continue;
    }
    const T r = at(activations, gate), u = at(activations, gate + units);
    const T c = at(activations, gate + 2 * units);
    const T candidate = d * (T(1) - u) * (T(1) - c * c);
    const T reset = candidate * at(gh, gate + 2 * units) * r * (T(1) - r);
    const T update = d * (at(h_prev, e) - c) * u * (T(1) - u);
    dgx[gate] = dgh[gate] = static_cast<S>(reset);
    dgx[gate + units] = dgh[gate + units] = static_cast<S>(update);
    dgx[gate + 2 * units] = static_cast<S>(candidate);
    dgh[gate + 2 * units] = static_cast<S>(candidate * r);
    dh_prev[e] = static_cast<S>(d * u);
  }
}

// c = sigmoid(f) c_prev + sigmoid(i) tanh(g); gates [B, 4H] = [i | f | g | o], activations
// [B, 3H] = [sigmoid(i) | sigmoid(f) | tanh(g)].
template <typename S, typename T = compute_t<S>>
__global__ void lstm_forward_kernel(S* c, S* activations, const S* gates, const S* c_prev,
                                    const S* mask, std::int64_t rows, std::int64_t units) {
  NG_KERNEL_LOOP(e, rows * units) {
    const std::int64_t row = e / units, j = e % units;
    const S* pre = gates + row * 4 * units + j;
    S* a = activations + row * 3 * units + j;
    const T i = sigmoid(static_cast<T>(pre[0])), f = sigmoid(static_cast<T>(pre[units]));
    const T g = hyperbolic_tangent(static_cast<T>(pre[2 * units]));
    a[0] = static_cast<S>(i);
    a[units] = static_cast<S>(f);
    a[2 * units] = static_cast<S>(g);
    const T previous = static_cast<T>(c_prev[e]);
    c[e] = static_cast<S>(takes_step(mask, row) ? f * previous + i * g : previous);
  }
}

// di = dc g i (1 - i), df = dc c_prev f (1 - f), dg = dc i (1 - g^2), do = 0; dc_prev = dc f.
template <typename S, typename T = compute_t<S>>
__global__ void lstm_backward_kernel(S* dgates, S* dc_prev, const S* dc, const S* activations,
                                     const S* c_prev, const S* mask, std::int64_t rows,
                                     std::int64_t units) {
  NG_KERNEL_LOOP(e, rows * units) {
    const std::int64_t row = e / units, j = e % units;
    S* dpre = dgates + row * 4 * units + j;
    const S* a = activations + row * 3 * units + j;
    dpre[3 * units] = S(0);
    if (!takes_step(mask, row)) {
      dpre[0] = dpre[units] = dpre[2 * units] = S(0);
      dc_prev[e] = dc[e];
      continue;
    }
    const T d = static_cast<T>(dc[e]);
    const T i = static_cast<T>(a[0]), f = static_cast<T>(a[units]);
    const T g = static_cast<T>(a[2 * units]);
    dpre[0] = static_cast<S>(d * g * i * (T(1) - i));
    dpre[units] = static_cast<S>(d * static_cast<T>(c_prev[e]) * f * (T(1) - f));
    dpre[2 * units] = static_cast<S>(d * i * (T(1) - g * g));
    dc_prev[e] = static_cast<S>(d * f);
  }
}

}  // namespace

void CudaBackend::gru_cell_forward(const TensorRef& h, const TensorRef& activations,
                                   const TensorRef& gx, const TensorRef& gh,
                                   const TensorRef& h_prev, const TensorRef* mask) {
  DeviceGuard guard(context_.device);
  const Context& context = context_;
  const char* op = "cuda gru_cell_forward";
  const auto [rows, H] = check_gru_forward(op, h, activations, gx, gh, h_prev, mask);
  if (rows * H == 0) return;
  dispatch_floating_or_bfloat16(h.dtype, op, [&](auto tag) {
    using S = typename decltype(tag)::type;
    gru_forward_kernel<S><<<grid_for(rows * H, context), threads_per_block, 0, context.stream>>>(
        h.ptr<S>(), activations.ptr<S>(), gx.ptr<const S>(), gh.ptr<const S>(),
        h_prev.ptr<const S>(), mask_data<S>(mask), rows, H);
    NG_CUDA_CHECK_LAUNCH();
  });
}

void CudaBackend::gru_cell_backward(const TensorRef& dgx, const TensorRef& dgh,
                                    const TensorRef& dh_prev, const TensorRef& dh,
                                    const TensorRef& activations, const TensorRef& gh,
                                    const TensorRef& h_prev, const TensorRef* mask) {
  DeviceGuard guard(context_.device);
  const Context& context = context_;
  const char* op = "cuda gru_cell_backward";
  const auto [rows, H] =
      check_gru_backward(op, dgx, dgh, dh_prev, dh, activations, gh, h_prev, mask);
  if (rows * H == 0) return;
  dispatch_floating_or_bfloat16(dh.dtype, op, [&](auto tag) {
    using S = typename decltype(tag)::type;
    gru_backward_kernel<S><<<grid_for(rows * H, context), threads_per_block, 0, context.stream>>>(
        dgx.ptr<S>(), dgh.ptr<S>(), dh_prev.ptr<S>(), dh.ptr<const S>(), activations.ptr<const S>(),
        gh.ptr<const S>(), h_prev.ptr<const S>(), mask_data<S>(mask), rows, H);
    NG_CUDA_CHECK_LAUNCH();
  });
}

void CudaBackend::lstm_cell_forward(const TensorRef& c, const TensorRef& activations,
                                    const TensorRef& gates, const TensorRef& c_prev,
                                    const TensorRef* mask) {
  DeviceGuard guard(context_.device);
  const Context& context = context_;
  const char* op = "cuda lstm_cell_forward";
  const auto [rows, H] = check_lstm_forward(op, c, activations, gates, c_prev, mask);
  if (rows * H == 0) return;
  dispatch_floating_or_bfloat16(c.dtype, op, [&](auto tag) {
    using S = typename decltype(tag)::type;
    lstm_forward_kernel<S><<<grid_for(rows * H, context), threads_per_block, 0, context.stream>>>(
        c.ptr<S>(), activations.ptr<S>(), gates.ptr<const S>(), c_prev.ptr<const S>(),
        mask_data<S>(mask), rows, H);
    NG_CUDA_CHECK_LAUNCH();
  });
}

void CudaBackend::lstm_cell_backward(const TensorRef& dgates, const TensorRef& dc_prev,
                                     const TensorRef& dc, const TensorRef& activations,
                                     const TensorRef& c_prev, const TensorRef* mask) {
  DeviceGuard guard(context_.device);
  const Context& context = context_;
  const char* op = "cuda lstm_cell_backward";
  const auto [rows, H] = check_lstm_backward(op, dgates, dc_prev, dc, activations, c_prev, mask);
  if (rows * H == 0) return;
  dispatch_floating_or_bfloat16(dc.dtype, op, [&](auto tag) {
    using S = typename decltype(tag)::type;
    lstm_backward_kernel<S><<<grid_for(rows * H, context), threads_per_block, 0, context.stream>>>(
        dgates.ptr<S>(), dc_prev.ptr<S>(), dc.ptr<const S>(), activations.ptr<const S>(),
        c_prev.ptr<const S>(), mask_data<S>(mask), rows, H);
    NG_CUDA_CHECK_LAUNCH();
  });
}

}  // namespace normgrad::backend::cuda
