// The recurrent family's CUDA kernels (backend.h gives the formulas and contracts), the twins
// of backends/cpu/recurrent.cpp that the tests hold them to: the fused pointwise parts of GRU
// and LSTM time steps, the GRU step with its state side's norms, and the whole LSTM step after
// its GEMM with its norms.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <type_traits>
#include <utility>

#include "backends/backend.h"
#include "backends/compute_type.h"
#include "backends/cuda/cuda_backend.h"
#include "backends/cuda/device_guard.h"
#include "backends/cuda/launch.cuh"
#include "backends/dtype_dispatch.h"
#include "backends/fused_row_norm.h"
#include "backends/recurrent_checks.h"

namespace normgrad::backend::cuda {

// ---- sums over a row's block -------------------------------------------------------------------
// What the row-block kernels of the fused steps with norms share: one thread block a row, sums
// over the block in a fixed order, and the column sums that turn each row's products into the
// norms' gain and bias gradients.

// N sums over the block, returned to every thread: each warp's butterfly, then the warps' sums
// in warp order. blockDim.x is a multiple of 32; `shared` holds N * 32 doubles; every thread of
// the block must make the call (it contains __syncthreads).
template <int N> __device__ void block_sums(double (&values)[N], double* shared) {
  const int lane = threadIdx.x % warp_size, warp = threadIdx.x / warp_size;
  for (int i = 0; i < N; ++i) values[i] = warp_sum(values[i]);
  __syncthreads();  // the previous call's readers are done with `shared`
  if (lane == 0)
    for (int i = 0; i < N; ++i) shared[i * warp_size + warp] = values[i];
  __syncthreads();
  const int warps = blockDim.x / warp_size;
  for (int i = 0; i < N; ++i)
    values[i] = warp_sum(lane < warps ? shared[i * warp_size + lane] : 0.0);
}

// The gradients of two norms' gains and biases from each row's products, laid out [rows, 2,
// first + second]: dy ŷ then dy, the first norm's columns then the second's. Column i is summed
// over the rows in row order, in double, and rounded once to the gradients' type G; a null
// output is skipped.
template <typename T, typename G>
__global__ void affine_column_sums_kernel(const T* products, std::int64_t rows, std::int64_t first,
                                          std::int64_t second, G* first_gain, G* first_bias,
                                          G* second_gain, G* second_bias) {
  const std::int64_t width = first + second;
  NG_KERNEL_LOOP(column, width) {
    const bool in_first = column < first;
    const std::int64_t index = in_first ? column : column - first;
    G* gain = in_first ? first_gain : second_gain;
    G* bias = in_first ? first_bias : second_bias;
    if (!gain && !bias) continue;  // a norm left out wrote no products for its columns
    double gain_sum = 0, bias_sum = 0;
    for (std::int64_t row = 0; row < rows; ++row) {
      gain_sum += double(products[row * 2 * width + column]);
      bias_sum += double(products[row * 2 * width + width + column]);
    }
    if (gain) gain[index] = G(gain_sum);
    if (bias) bias[index] = G(bias_sum);
  }
}

// Threads per row block: a multiple of 32 near H, at most 256.
inline int row_threads(std::int64_t units) {
  const std::int64_t rounded = (units + warp_size - 1) / warp_size * warp_size;
  return static_cast<int>(std::clamp<std::int64_t>(rounded, warp_size, threads_per_block));
}

// Blocks for `rows` rows: one each, up to the grid's limit (the kernels loop over the rest).
inline unsigned row_blocks(std::int64_t rows) {
  return static_cast<unsigned>(std::clamp<std::int64_t>(rows, 1, 65535));
}

template <typename T> T* optional_data(const TensorRef* operand) {
  return operand ? operand->ptr<T>() : nullptr;
}

// ---- activations and the mask ------------------------------------------------------------------
// The activations and the mask test of the kernels below, each the CUDA twin of the CPU's.

// sigmoid(x) = 1 / (1 + e^-x), and e^x below x = -(max_exponent - 1) ln 2, where e^-x would
// overflow and 1 + e^x rounds to 1 (the CPU's sigmoid_value).
template <typename T> __device__ __forceinline__ T sigmoid(T x) {
  if constexpr (sizeof(T) == 4) {
    constexpr float limit = -127.0f * 0.6931471805599453f;
    return x < limit ? expf(x) : 1.0f / (1.0f + expf(-x));
  } else {
    constexpr double limit = -1023.0 * 0.6931471805599453;
    return x < limit ? ::exp(x) : 1.0 / (1.0 + ::exp(-x));
  }
}

template <typename T> __device__ __forceinline__ T hyperbolic_tangent(T x) {
  if constexpr (sizeof(T) == 4)
    return tanhf(x);
  else
    return ::tanh(x);
}

// The mask is stored in the data's type (bfloat16 included), 0 where a row keeps its state.
template <typename S> __device__ __forceinline__ bool takes_step(const S* mask, std::int64_t row) {
  return mask == nullptr || static_cast<compute_t<S>>(mask[row]) != compute_t<S>(0);
}

// A step's mask as a kernel takes it: null when every row takes the step.
template <typename T> const T* mask_data(const TensorRef* mask) {
  return mask ? mask->ptr<const T>() : nullptr;
}

// ---- GRU and LSTM cells ------------------------------------------------------------------------
// Every operand is a contiguous [B, k H] matrix, so one
// thread handles one (row, unit) pair: it reads that unit's gate pre-activations from each
// block of H columns, and writes the unit's activations, state and gradients. No two threads
// write the same element and nothing is summed across threads, so the results do not depend
// on the launch configuration.
//
// A row whose mask is 0 keeps its previous state (forward: activations are still written, as
// on the CPU) and passes its state gradient straight through (backward: zero gate gradients).

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

// ---- the GRU step with its state norms ---------------------------------------------------------
// A normed GRU step is one kernel after its GEMM forward, and one (plus a small column sum)
// backward, where the composed step takes a split, two norms, a cat and the gate kernel each way.
//
// One thread block per row: the row's 3H values are reduced to the two norms' statistics with
// sums over the block in a fixed order (launch.cuh), then every thread handles units j, j +
// blockDim.x, ...: the three normalised pre-activations of unit j, its gates and its state.
// Statistics and the backward's row sums accumulate in double, as the norm kernels' do.
//
// Backward, pass 1 computes the gate gradients, parks the gradient of the normalised gh (dy) in
// dgh, and sums each block's row sums; pass 2 turns dy into the gradient of the raw gh in place
// (each thread reads back only what it wrote). The gains' and biases' gradients are sums over
// rows: each row writes its products dy ŷ and dy to a workspace, and a second kernel sums each
// column over the rows in row order, so the result does not depend on the launch.
//
// The kernels store S and compute in T = compute_t<S> (backends/compute_type.h): bfloat16 data,
// gains and mask are widened as they are read, statistics and the products are T, and every
// output is rounded once. dy, kept between the passes, stays T (in a workspace for bfloat16),
// so the result is the float32 kernel's on the same values, bit for bit.

namespace {

template <typename S, typename T = compute_t<S>> struct NormedGruForwardArgs {
  S* h;
  S* activations;
  S* normalised;
  T* statistics;  // [4, rows]
  const S* gx;
  const S* gh;
  const S* h_prev;
  const S* mask;
  std::int64_t rows, units;
  FusedRowNorm<S> gates, candidate;
};

template <typename S, typename T = compute_t<S>>
__global__ void normed_gru_forward_kernel(const NormedGruForwardArgs<S> args) {
  __shared__ double shared[2 * warp_size];
  const std::int64_t H = args.units, width = 3 * H;
  const FusedRowNorm<S>& gates = args.gates;
  const FusedRowNorm<S>& candidate = args.candidate;
  for (std::int64_t row = blockIdx.x; row < args.rows; row += gridDim.x) {
    const S* s = args.gh + row * width;
    double sums[2] = {0, 0};  // the gates block's, the candidate block's
    for (std::int64_t i = threadIdx.x; i < 2 * H; i += blockDim.x)
      sums[0] += gates.statistic_term(double(s[i]), i);
    for (std::int64_t i = threadIdx.x; i < H; i += blockDim.x)
      sums[1] += candidate.statistic_term(double(s[2 * H + i]), i);
    block_sums(sums, shared);
    const double mean[2] = {gates.centred ? sums[0] / double(2 * H) : 0.0,
                            candidate.centred ? sums[1] / double(H) : 0.0};
    if (gates.centred || candidate.centred) {  // the same for every thread of the launch
      // LayerNorm's variance from a second pass over the deviations, never E[a^2] - E[a]^2.
      double deviations[2] = {0, 0};
      if (gates.centred)
        for (std::int64_t i = threadIdx.x; i < 2 * H; i += blockDim.x) {
          const double deviation = double(s[i]) - mean[0];
          deviations[0] += deviation * deviation;
        }
      if (candidate.centred)
        for (std::int64_t i = threadIdx.x; i < H; i += blockDim.x) {
          const double deviation = double(s[2 * H + i]) - mean[1];
          deviations[1] += deviation * deviation;
        }
      block_sums(deviations, shared);
      if (gates.centred) sums[0] = deviations[0];
      if (candidate.centred) sums[1] = deviations[1];
    }
    const double inverse_r[2] = {gates.inverse_r(sums[0], 2 * H), candidate.inverse_r(sums[1], H)};
    if (threadIdx.x == 0) {
      args.statistics[row] = T(mean[0]);
      args.statistics[args.rows + row] = T(inverse_r[0]);
      args.statistics[2 * args.rows + row] = T(mean[1]);
      args.statistics[3 * args.rows + row] = T(inverse_r[1]);
    }
    const bool step = takes_step(args.mask, row);
    const auto value = [](const S* operand, std::int64_t i) { return static_cast<T>(operand[i]); };
    for (std::int64_t j = threadIdx.x; j < H; j += blockDim.x) {
      const std::int64_t at = row * width + j;  // unit j of the reset block
      const T reset = gates.normalise(value(s, j), j, mean[0], inverse_r[0]);
      const T update = gates.normalise(value(s, H + j), H + j, mean[0], inverse_r[0]);
      const T proposal = candidate.normalise(value(s, 2 * H + j), j, mean[1], inverse_r[1]);
      args.normalised[at] = static_cast<S>(reset);
      args.normalised[at + H] = static_cast<S>(update);
      args.normalised[at + 2 * H] = static_cast<S>(proposal);
      const T r = sigmoid(value(args.gx, at) + reset);
      const T u = sigmoid(value(args.gx, at + H) + update);
      const T c = hyperbolic_tangent(value(args.gx, at + 2 * H) + r * proposal);
      args.activations[at] = static_cast<S>(r);
      args.activations[at + H] = static_cast<S>(u);
      args.activations[at + 2 * H] = static_cast<S>(c);
      const T previous = value(args.h_prev, row * H + j);
      args.h[row * H + j] = static_cast<S>(step ? c + u * (previous - c) : previous);
    }
  }
}

template <typename S, typename T = compute_t<S>> struct NormedGruBackwardArgs {
  S* dgx;
  S* dgh;
  S* dh_prev;
  T* kept;      // [rows, 3H]: dy between the passes (unused when S is T: dgh holds it)
  T* products;  // null, or [rows, 2, 3H]: dy ŷ, then dy, for the gains' and biases' sums
  const S* dh;
  const S* activations;
  const S* normalised;
  const T* statistics;  // [4, rows]
  const S* gh;
  const S* h_prev;
  const S* mask;
  std::int64_t rows, units;
  FusedRowNorm<S> gates, candidate;
};

template <typename S, typename T = compute_t<S>>
__global__ void normed_gru_backward_kernel(const NormedGruBackwardArgs<S> args) {
  __shared__ double shared[6 * warp_size];
  const std::int64_t H = args.units, width = 3 * H;
  const auto value = [](const S* operand, std::int64_t i) { return static_cast<T>(operand[i]); };
  for (std::int64_t row = blockIdx.x; row < args.rows; row += gridDim.x) {
    S* dx = args.dgx + row * width;
    S* ds = args.dgh + row * width;
    T* dy_of;  // dy of the normalised gh, pass 1 to pass 2
    if constexpr (std::is_same_v<S, T>)
      dy_of = ds;
    else
      dy_of = args.kept + row * width;
    T* products = args.products ? args.products + row * 2 * width : nullptr;
    const S* a = args.gh + row * width;
    if (!takes_step(args.mask, row)) {  // the same for the whole block
      for (std::int64_t i = threadIdx.x; i < width; i += blockDim.x) {
        dx[i] = ds[i] = S(0);
        if (products) products[i] = products[width + i] = T(0);
      }
      for (std::int64_t j = threadIdx.x; j < H; j += blockDim.x)
        args.dh_prev[row * H + j] = args.dh[row * H + j];
      continue;
    }
    const double head[2] = {double(args.statistics[row]),
                            double(args.statistics[2 * args.rows + row])};
    const double inverse_r[2] = {double(args.statistics[args.rows + row]),
                                 double(args.statistics[3 * args.rows + row])};
    // Pass 1: the gate gradients, dy parked in dgh, and the row sums (3 per block).
    double sums[6] = {0, 0, 0, 0, 0, 0};
    for (std::int64_t j = threadIdx.x; j < H; j += blockDim.x) {
      const std::int64_t at = row * width + j;
      const T d = value(args.dh, row * H + j);
      const T r = value(args.activations, at), u = value(args.activations, at + H);
      const T c = value(args.activations, at + 2 * H);
      const T candidate = d * (T(1) - u) * (T(1) - c * c);
      const T reset = candidate * value(args.normalised, at + 2 * H) * r * (T(1) - r);
      const T update = d * (value(args.h_prev, row * H + j) - c) * u * (T(1) - u);
      dx[j] = static_cast<S>(reset);
      dx[H + j] = static_cast<S>(update);
      dx[2 * H + j] = static_cast<S>(candidate);
      args.dh_prev[row * H + j] = static_cast<S>(d * u);
      const T proposal = candidate * r;
      dy_of[j] = reset;
      dy_of[H + j] = update;
      dy_of[2 * H + j] = proposal;
      add_row_terms(args.gates, double(reset), double(a[j]), j, head[0], sums);
      add_row_terms(args.gates, double(update), double(a[H + j]), H + j, head[0], sums);
      add_row_terms(args.candidate, double(proposal), double(a[2 * H + j]), j, head[1], sums + 3);
    }
    block_sums(sums, shared);
    const RowCoefficients gates = coefficients(args.gates, sums, 2 * H, head[0], inverse_r[0]);
    const RowCoefficients candidate =
        coefficients(args.candidate, sums + 3, H, head[1], inverse_r[1]);
    // Pass 2: dy into the raw gh's gradient, in place; the products for the affine sums.
    for (std::int64_t j = threadIdx.x; j < H; j += blockDim.x) {
      const std::int64_t columns[3] = {j, H + j, 2 * H + j};
      for (int block = 0; block < 3; ++block) {
        const std::int64_t column = columns[block];
        const bool gate = block < 2;
        const double dy = double(dy_of[column]);
        double yhat = 0;
        const double da =
            gate ? raw_gradient(args.gates, gates, dy, double(a[column]), column, yhat)
                 : raw_gradient(args.candidate, candidate, dy, double(a[column]), j, yhat);
        ds[column] = static_cast<S>(da);
        if (products) {
          products[column] = T(dy * yhat);
          products[width + column] = T(dy);
        }
      }
    }
  }
}

}  // namespace

void CudaBackend::normed_gru_cell_forward(const GruStateNorms& norms, const TensorRef& h,
                                          const TensorRef& activations, const TensorRef& normalised,
                                          const TensorRef& statistics, const TensorRef& gx,
                                          const TensorRef& gh, const TensorRef& h_prev,
                                          const TensorRef* mask) {
  DeviceGuard guard(context_.device);
  const Context& context = context_;
  const char* op = "cuda normed_gru_cell_forward";
  const auto [rows, H] = check_normed_gru_forward(op, norms, h, activations, normalised, statistics,
                                                  gx, gh, h_prev, mask);
  if (rows * H == 0) return;
  dispatch_floating_or_bfloat16(h.dtype, op, [&](auto tag) {
    using S = typename decltype(tag)::type;
    using T = compute_t<S>;
    NormedGruForwardArgs<S> args{
        h.ptr<S>(),
        activations.ptr<S>(),
        normalised.ptr<S>(),
        statistics.ptr<T>(),
        gx.ptr<const S>(),
        gh.ptr<const S>(),
        h_prev.ptr<const S>(),
        mask_data<S>(mask),
        rows,
        H,
        fused_row_norm<S>(norms.gates, norms.gates_gain, norms.gates_bias),
        fused_row_norm<S>(norms.candidate, norms.candidate_gain, norms.candidate_bias)};
    normed_gru_forward_kernel<S><<<row_blocks(rows), row_threads(H), 0, context.stream>>>(args);
    NG_CUDA_CHECK_LAUNCH();
  });
}

void CudaBackend::normed_gru_cell_backward(const GruStateNorms& norms, const TensorRef& dgx,
                                           const TensorRef& dgh, const TensorRef& dh_prev,
                                           const GruStateNormGrads& affine, const TensorRef& dh,
                                           const TensorRef& activations,
                                           const TensorRef& normalised, const TensorRef& statistics,
                                           const TensorRef& gh, const TensorRef& h_prev,
                                           const TensorRef* mask) {
  DeviceGuard guard(context_.device);
  const Context& context = context_;
  const char* op = "cuda normed_gru_cell_backward";
  const auto [rows, H] =
      check_normed_gru_backward(op, norms, dgx, dgh, dh_prev, affine, dh, activations, normalised,
                                statistics, gh, h_prev, mask);
  if (H == 0) return;
  const bool wants_affine =
      affine.gates_gain || affine.gates_bias || affine.candidate_gain || affine.candidate_bias;
  dispatch_floating_or_bfloat16(dh.dtype, op, [&](auto tag) {
    using S = typename decltype(tag)::type;
    using T = compute_t<S>;
    Workspace products(context, wants_affine ? rows * 6 * H * sizeof(T) : 0);
    if (rows > 0) {
      const Workspace kept(context, std::is_same_v<S, T> ? 0 : rows * 3 * H * sizeof(T));
      NormedGruBackwardArgs<S> args{
          dgx.ptr<S>(),
          dgh.ptr<S>(),
          dh_prev.ptr<S>(),
          kept.as<T>(),
          wants_affine ? products.as<T>() : nullptr,
          dh.ptr<const S>(),
          activations.ptr<const S>(),
          normalised.ptr<const S>(),
          statistics.ptr<const T>(),
          gh.ptr<const S>(),
          h_prev.ptr<const S>(),
          mask_data<S>(mask),
          rows,
          H,
          fused_row_norm<S>(norms.gates, norms.gates_gain, norms.gates_bias),
          fused_row_norm<S>(norms.candidate, norms.candidate_gain, norms.candidate_bias)};
      normed_gru_backward_kernel<S><<<row_blocks(rows), row_threads(H), 0, context.stream>>>(args);
      NG_CUDA_CHECK_LAUNCH();
    }
    if (wants_affine) {
      affine_column_sums_kernel<<<grid_for(3 * H, context), threads_per_block, 0, context.stream>>>(
          products.as<const T>(), rows, 2 * H, H, optional_data<S>(affine.gates_gain),
          optional_data<S>(affine.gates_bias), optional_data<S>(affine.candidate_gain),
          optional_data<S>(affine.candidate_bias));
      NG_CUDA_CHECK_LAUNCH();
    }
  });
}

// ---- the LSTM step with its norms --------------------------------------------------------------
// Both this and the CPU's twin take their row-norm arithmetic from backends/fused_row_norm.h.
// An LSTM step is one kernel forward and one (plus a column sum for the gains) backward, where
// the composed step takes a norm, an add, the cell kernel, a sigmoid, a second norm, a tanh, a
// product and a select each way.
//
// One thread block a row; thread t handles units j = t, t + blockDim.x, ... and, for each, the
// four gate columns j, H + j, 2H + j and 3H + j, so every value a thread reads back in a later
// pass it wrote itself. The norms' statistics and backward's row sums are sums over the block
// in a fixed order. Forward writes the new cell state before the cell norm's statistic is
// summed, and the sum's barrier makes it visible to the block. The gains' gradients: each row
// writes its products to a workspace and a second kernel sums the columns in row order.

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
template <typename S, typename T = compute_t<S>> struct LstmStepForwardArgs {
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
__global__ void lstm_step_forward_kernel(const LstmStepForwardArgs<S> args) {
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

template <typename S, typename T = compute_t<S>> struct LstmStepBackwardArgs {
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
__global__ void lstm_step_backward_kernel(const LstmStepBackwardArgs<S> args) {
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
    const LstmStepForwardArgs<S> args{state.ptr<S>(),
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
      const LstmStepBackwardArgs<S> args{dgx.ptr<S>(),
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
