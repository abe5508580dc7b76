// A GRU step with its state side's two norms fused into it (backend.h gives the contract; the
// CPU's backends/cpu/recurrent_normed_gru.cpp is the twin the tests hold this to). A normed step is
// then one kernel after its GEMM forward, and one (plus a small column sum) backward, where
// the composed step takes a split, two norms, a cat and the gate kernel each way.
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

template <typename S, typename T = compute_t<S>> struct ForwardArgs {
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
__global__ void normed_gru_forward_kernel(const ForwardArgs<S> args) {
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

template <typename S, typename T = compute_t<S>> struct BackwardArgs {
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
__global__ void normed_gru_backward_kernel(const BackwardArgs<S> args) {
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
    ForwardArgs<S> args{
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
      BackwardArgs<S> args{
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

}  // namespace normgrad::backend::cuda
