// An LSTM step after its GEMM, with its norms fused in (backend.h gives the contract; the CPU's
// backends/cpu/recurrent_lstm_step.cpp is the twin the tests hold this to, and both take their
// row-norm arithmetic from backends/fused_row_norm.h). A step is then one kernel forward and one
// (plus a column sum for the gains) backward, where the composed step takes a norm, an add, the
// cell kernel, a sigmoid, a second norm, a tanh, a product and a select each way.
//
// One thread block a row; thread t handles units j = t, t + blockDim.x, ... and, for each, the
// four gate columns j, H + j, 2H + j and 3H + j, so every value a thread reads back in a later
// pass it wrote itself. The norms' statistics and backward's row sums are sums over the block
// in a fixed order. Forward writes the new cell state before the cell norm's statistic is
// summed, and the sum's barrier makes it visible to the block. The gains' gradients: each row
// writes its products to a workspace and a second kernel sums the columns in row order.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "backends/compute_type.h"
#include "backends/cuda/cuda_backend.h"
#include "backends/cuda/device_guard.h"
#include "backends/cuda/recurrent_gate_math.cuh"
#include "backends/cuda/launch.cuh"
#include "backends/cuda/row_blocks.cuh"
#include "backends/dtype_dispatch.h"
#include "backends/fused_row_norm.h"
#include "backends/recurrent_checks.h"

namespace normgrad::backend::cuda {

namespace {

template <typename S> struct StepNorms {
  bool state_applied = false, cell_applied = false;
  FusedRowNorm<S> state, cell;
};

template <typename S> StepNorms<S> step_norms(const LstmStepNorms& norms) {
  return {norms.normalise_state, norms.normalise_cell,
          fused_row_norm<S>(norms.state, norms.state_gain, norms.state_bias),
          fused_row_norm<S>(norms.cell, norms.cell_gain, norms.cell_bias)};
}

// A row's statistic over the block: its mean (0 for the RMS family) and 1 / r. Every thread of
// the block must call it.
template <typename G, typename V>
__device__ void row_statistic(const FusedRowNorm<G>& norm, const V* a, std::int64_t n,
                              double* shared, double& mean, double& inverse_r) {
  double sum[1] = {0};
  for (std::int64_t i = threadIdx.x; i < n; i += blockDim.x)
    sum[0] += norm.statistic_term(double(a[i]), i);
  block_sums(sum, shared);
  mean = 0;
  if (norm.centred) {
    mean = sum[0] / double(n);
    sum[0] = 0;  // the variance from the deviations, never E[a^2] - E[a]^2
    for (std::int64_t i = threadIdx.x; i < n; i += blockDim.x)
      sum[0] += (double(a[i]) - mean) * (double(a[i]) - mean);
    block_sums(sum, shared);
  }
  inverse_r = norm.inverse_r(sum[0], n);
}

// The kernels store S and compute in T = compute_t<S> (backends/compute_type.h). What a pass
// reads back from an earlier one (forward: c and the output gate o; backward: the state side's
// gate gradients) stays T: in the outputs themselves when S is T, else in `kept`, a workspace of
// T, so that bfloat16 gives the float32 kernel's result on the same values, bit for bit.
template <typename S, typename T = compute_t<S>> struct ForwardArgs {
  S* state;
  S* activations;
  S* cell;
  T* statistics;
  T* kept;  // [rows, 2H]: c, then o (unused when S is T)
  const S* gx;
  const S* gh;
  const S* h_prev;
  const S* c_prev;
  const S* mask;
  std::int64_t rows, units;
  StepNorms<S> norms;
};

template <typename S, typename T = compute_t<S>>
__global__ void lstm_step_forward_kernel(const ForwardArgs<S> args) {
  __shared__ double shared[warp_size];
  const std::int64_t H = args.units;
  const StepNorms<S>& norms = args.norms;
  const auto value = [](const S* operand, std::int64_t i) { return static_cast<T>(operand[i]); };
  for (std::int64_t row = blockIdx.x; row < args.rows; row += gridDim.x) {
    const S* x = args.gx + row * 4 * H;
    const S* p = args.gh + row * 4 * H;
    S* a = args.activations + row * 4 * H;
    S* h = args.state + row * 2 * H;
    S* c = h + H;
    S* n = args.cell + row * H;
    T* kept_c;
    T* kept_o;
    if constexpr (std::is_same_v<S, T>) {
      kept_c = c;
      kept_o = a + 3 * H;
    } else {
      kept_c = args.kept + row * 2 * H;
      kept_o = kept_c + H;
    }
    double state_mean = 0, state_inverse_r = 1, cell_mean = 0, cell_inverse_r = 1;
    if (norms.state_applied)  // the same for every thread of the launch
      row_statistic(norms.state, p, 4 * H, shared, state_mean, state_inverse_r);
    for (std::int64_t j = threadIdx.x; j < H; j += blockDim.x) {
      T gate[4];
      for (int block = 0; block < 4; ++block) {
        const std::int64_t k = block * H + j;
        const T s = norms.state_applied
                        ? norms.state.normalise(value(p, k), k, state_mean, state_inverse_r)
                        : value(p, k);
        const T pre = value(x, k) + s;
        gate[block] = block == 2 ? hyperbolic_tangent(pre) : sigmoid(pre);
        a[k] = static_cast<S>(gate[block]);
      }
      kept_o[j] = gate[3];
      kept_c[j] = gate[1] * value(args.c_prev, row * H + j) + gate[0] * gate[2];
      c[j] = static_cast<S>(kept_c[j]);
    }
    if (norms.cell_applied) {
      __syncthreads();  // every c of the row written before the statistic reads them
      row_statistic(norms.cell, static_cast<const T*>(kept_c), H, shared, cell_mean,
                    cell_inverse_r);
    }
    const bool step = takes_step(args.mask, row);
    for (std::int64_t j = threadIdx.x; j < H; j += blockDim.x) {
      const T normalised = norms.cell_applied
                               ? norms.cell.normalise(kept_c[j], j, cell_mean, cell_inverse_r)
                               : kept_c[j];
      n[j] = static_cast<S>(normalised);
      h[j] = step ? static_cast<S>(kept_o[j] * hyperbolic_tangent(normalised))
                  : args.h_prev[row * H + j];
      if (!step) c[j] = args.c_prev[row * H + j];
    }
    if (threadIdx.x == 0) {
      args.statistics[row] = T(state_mean);
      args.statistics[args.rows + row] = T(state_inverse_r);
      args.statistics[2 * args.rows + row] = T(cell_mean);
      args.statistics[3 * args.rows + row] = T(cell_inverse_r);
    }
  }
}

template <typename S, typename T = compute_t<S>> struct BackwardArgs {
  S* dgx;
  S* dgh;
  S* dh_prev;
  S* dc_prev;
  T* products;  // null, or [rows, 2, 5H]: dy ŷ then dy, the state norm's 4H then the cell's H
  T* kept;      // [rows, 4H]: the gate gradients between the passes (unused when S is T)
  const S* dstate;
  const S* state;
  const S* activations;
  const S* cell;
  const T* statistics;
  const S* gh;
  const S* c_prev;
  const S* mask;
  std::int64_t rows, units;
  StepNorms<S> norms;
};

template <typename S, typename T = compute_t<S>>
__global__ void lstm_step_backward_kernel(const BackwardArgs<S> args) {
  __shared__ double shared[3 * warp_size];
  const std::int64_t H = args.units;
  const StepNorms<S>& norms = args.norms;
  for (std::int64_t row = blockIdx.x; row < args.rows; row += gridDim.x) {
    S* dx = args.dgx + row * 4 * H;
    S* dp = args.dgh + row * 4 * H;
    T* products = args.products ? args.products + row * 10 * H : nullptr;
    const S* dh = args.dstate + row * 2 * H;
    const S* dc = dh + H;
    if (!takes_step(args.mask, row)) {  // the same for the whole block
      for (std::int64_t k = threadIdx.x; k < 4 * H; k += blockDim.x) dx[k] = dp[k] = S(0);
      for (std::int64_t j = threadIdx.x; j < H; j += blockDim.x) {
        args.dh_prev[row * H + j] = dh[j];
        args.dc_prev[row * H + j] = dc[j];
      }
      if (products)
        for (std::int64_t k = threadIdx.x; k < 10 * H; k += blockDim.x) products[k] = T(0);
      continue;
    }
    T* kept_dx;
    if constexpr (std::is_same_v<S, T>)
      kept_dx = dx;
    else
      kept_dx = args.kept + row * 4 * H;
    const S* a = args.activations + row * 4 * H;
    const S* c = args.state + row * 2 * H + H;
    const S* n = args.cell + row * H;
    const S* p = args.gh + row * 4 * H;
    const double state_head = double(args.statistics[row]);
    const double state_inverse_r = double(args.statistics[args.rows + row]);
    const double cell_head = double(args.statistics[2 * args.rows + row]);
    const double cell_inverse_r = double(args.statistics[3 * args.rows + row]);
    const auto dn_at = [&](std::int64_t j) {
      const double t = ::tanh(double(n[j]));
      return double(dh[j]) * double(a[3 * H + j]) * (1 - t * t);
    };
    RowCoefficients cell_co;
    if (norms.cell_applied) {
      double sums[3] = {0, 0, 0};
      for (std::int64_t j = threadIdx.x; j < H; j += blockDim.x)
        add_row_terms(norms.cell, dn_at(j), double(c[j]), j, cell_head, sums);
      block_sums(sums, shared);
      cell_co = coefficients(norms.cell, sums, H, cell_head, cell_inverse_r);
    }
    double state_sums[3] = {0, 0, 0};
    for (std::int64_t j = threadIdx.x; j < H; j += blockDim.x) {
      const double dn = dn_at(j);
      double yhat = 0;
      const double dcn =
          norms.cell_applied ? raw_gradient(norms.cell, cell_co, dn, double(c[j]), j, yhat) : dn;
      if (products) {
        products[4 * H + j] = T(dn * yhat);
        products[9 * H + j] = T(dn);
      }
      const T dcell = T(double(dc[j]) + dcn);
      const T i = T(a[j]), f = T(a[H + j]), g = T(a[2 * H + j]), o = T(a[3 * H + j]);
      const T t = T(::tanh(double(n[j])));
      const T da[4] = {dcell * g * i * (T(1) - i),
                       dcell * T(args.c_prev[row * H + j]) * f * (T(1) - f),
                       dcell * i * (T(1) - g * g), T(dh[j]) * t * o * (T(1) - o)};
      for (int block = 0; block < 4; ++block) {
        const std::int64_t k = block * H + j;
        dx[k] = static_cast<S>(da[block]);
        if (norms.state_applied) {
          kept_dx[k] = da[block];
          add_row_terms(norms.state, double(da[block]), double(p[k]), k, state_head, state_sums);
        } else {
          dp[k] = static_cast<S>(da[block]);
        }
      }
      args.dc_prev[row * H + j] = static_cast<S>(dcell * f);
      args.dh_prev[row * H + j] = S(0);
    }
    if (!norms.state_applied) continue;  // the same for every thread of the launch
    block_sums(state_sums, shared);
    const RowCoefficients state_co =
        coefficients(norms.state, state_sums, 4 * H, state_head, state_inverse_r);
    for (std::int64_t j = threadIdx.x; j < H; j += blockDim.x)
      for (int block = 0; block < 4; ++block) {
        const std::int64_t k = block * H + j;
        double yhat = 0;
        dp[k] = static_cast<S>(
            raw_gradient(norms.state, state_co, double(kept_dx[k]), double(p[k]), k, yhat));
        if (products) {
          products[k] = T(double(kept_dx[k]) * yhat);
          products[5 * H + k] = kept_dx[k];
        }
      }
  }
}

}  // namespace

void CudaBackend::lstm_step_forward(const LstmStepNorms& norms, const TensorRef& state,
                                    const TensorRef& activations, const TensorRef& cell,
                                    const TensorRef& statistics, const TensorRef& gx,
                                    const TensorRef& gh, const TensorRef& h_prev,
                                    const TensorRef& c_prev, const TensorRef* mask) {
  DeviceGuard guard(context_.device);
  const Context& context = context_;
  const char* op = "cuda lstm_step_forward";
  const auto [rows, H] = check_lstm_step_forward(op, norms, state, activations, cell, statistics,
                                                 gx, gh, h_prev, c_prev, mask);
  if (rows * H == 0) return;
  dispatch_floating_or_bfloat16(cell.dtype, op, [&](auto tag) {
    using S = typename decltype(tag)::type;
    using T = compute_t<S>;
    const Workspace kept(context, std::is_same_v<S, T> ? 0 : rows * 2 * H * sizeof(T));
    const ForwardArgs<S> args{state.ptr<S>(),
                              activations.ptr<S>(),
                              cell.ptr<S>(),
                              statistics.ptr<T>(),
                              kept.as<T>(),
                              gx.ptr<const S>(),
                              gh.ptr<const S>(),
                              h_prev.ptr<const S>(),
                              c_prev.ptr<const S>(),
                              mask_data<S>(mask),
                              rows,
                              H,
                              step_norms<S>(norms)};
    lstm_step_forward_kernel<S><<<row_blocks(rows), row_threads(H), 0, context.stream>>>(args);
    NG_CUDA_CHECK_LAUNCH();
  });
}

void CudaBackend::lstm_step_backward(const LstmStepNorms& norms, const TensorRef& dgx,
                                     const TensorRef& dgh, const TensorRef& dh_prev,
                                     const TensorRef& dc_prev, const LstmStepNormGrads& affine,
                                     const TensorRef& dstate, const TensorRef& state,
                                     const TensorRef& activations, const TensorRef& cell,
                                     const TensorRef& statistics, const TensorRef& gh,
                                     const TensorRef& c_prev, const TensorRef* mask) {
  DeviceGuard guard(context_.device);
  const Context& context = context_;
  const char* op = "cuda lstm_step_backward";
  const auto [rows, H] =
      check_lstm_step_backward(op, norms, dgx, dgh, dh_prev, dc_prev, affine, dstate, state,
                               activations, cell, statistics, gh, c_prev, mask);
  if (H == 0) return;
  const bool wants_affine =
      affine.state_gain || affine.state_bias || affine.cell_gain || affine.cell_bias;
  dispatch_floating_or_bfloat16(cell.dtype, op, [&](auto tag) {
    using S = typename decltype(tag)::type;
    using T = compute_t<S>;
    Workspace products(context, wants_affine ? rows * 10 * H * sizeof(T) : 0);
    if (rows > 0) {
      const bool keeps = !std::is_same_v<S, T> && norms.normalise_state;
      const Workspace kept(context, keeps ? rows * 4 * H * sizeof(T) : 0);
      const BackwardArgs<S> args{dgx.ptr<S>(),
                                 dgh.ptr<S>(),
                                 dh_prev.ptr<S>(),
                                 dc_prev.ptr<S>(),
                                 wants_affine ? products.as<T>() : nullptr,
                                 kept.as<T>(),
                                 dstate.ptr<const S>(),
                                 state.ptr<const S>(),
                                 activations.ptr<const S>(),
                                 cell.ptr<const S>(),
                                 statistics.ptr<const T>(),
                                 gh.ptr<const S>(),
                                 c_prev.ptr<const S>(),
                                 mask_data<S>(mask),
                                 rows,
                                 H,
                                 step_norms<S>(norms)};
      lstm_step_backward_kernel<S><<<row_blocks(rows), row_threads(H), 0, context.stream>>>(args);
      NG_CUDA_CHECK_LAUNCH();
    }
    if (wants_affine) {
      affine_column_sums_kernel<<<grid_for(5 * H, context), threads_per_block, 0, context.stream>>>(
          products.as<const T>(), rows, 4 * H, H, optional_data<S>(affine.state_gain),
          optional_data<S>(affine.state_bias), optional_data<S>(affine.cell_gain),
          optional_data<S>(affine.cell_bias));
      NG_CUDA_CHECK_LAUNCH();
    }
  });
}

}  // namespace normgrad::backend::cuda
