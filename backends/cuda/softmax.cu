// Softmax and log-softmax along one dim, forward and backward.
//
// Forward, per line x of n values along the dim (m = max x, the shift that keeps exp from
// overflowing):
//   softmax:     y = exp(x - m) * (1 / sum exp(x - m))
//   log_softmax: y = (x - m) - log(sum exp(x - m))
// Backward, from dy and the forward output y:
//   softmax:     dx = y * (dy - sum(dy * y))
//   log_softmax: dx = dy - exp(y) * sum(dy)
// Sums are kept in double, as on the CPU, and rounded to T once. Each kernel stores S and
// computes in T = compute_t<S>: bfloat16 values are widened as they are loaded and rounded once
// as they are stored, which is the float32 kernel's result on them (backends/compute_type.h).
//
// Lines are independent, so each goes to one group of threads:
//   warp kernels:  lines that are contiguous along the dim and at most 1024 long (the common
//                  case: the last dim of a row-major tensor). One warp per line; lane l holds
//                  elements l, l + 32, ... in registers, so x is read once and y written once,
//                  every access coalesced. Max and sum are warp butterflies (launch.cuh).
//   line kernels:  everything else, in three passes over memory (max, sum, write; the later
//                  passes mostly hit L2). The group is a block of 256 threads for long lines,
//                  a warp for short ones, or a single thread per line when the lines, not the
//                  dim, are adjacent in memory (softmax over dim 0 of a row-major matrix), so
//                  that neighbouring threads read neighbouring addresses.
// The order of every max and sum depends on n and on the kind of group alone, so results are
// the same on every run; no line is shared between groups, so no atomics are needed.

#include <cstdint>
#include <limits>
#include <type_traits>

#include "backends/compute_type.h"
#include "backends/cuda/cuda_backend.h"
#include "backends/cuda/device_guard.h"
#include "backends/cuda/launch.cuh"
#include "backends/dtype_dispatch.h"

namespace normgrad::backend::cuda {

namespace {

template <typename T> __device__ __forceinline__ T math_exp(T x) {
  if constexpr (sizeof(T) == 4)
    return expf(x);
  else
    return ::exp(x);
}

// max(a, b), NaN when either is NaN: one NaN makes the whole line NaN, as on the CPU.
template <typename T> __device__ __forceinline__ T maximum_value(T a, T b) {
  return (a > b || a != a) ? a : b;
}

template <typename T> __device__ __forceinline__ T negative_infinity() {
  return -std::numeric_limits<T>::infinity();
}

// ---- warp kernels: contiguous lines of at most 32 * per_lane elements ----------------------

// The index of this thread's warp in the grid, and the number of warps in the grid.
__device__ __forceinline__ std::int64_t global_warp() {
  return (blockIdx.x * std::int64_t{blockDim.x} + threadIdx.x) / warp_size;
}
__device__ __forceinline__ std::int64_t grid_warps() {
  return std::int64_t{gridDim.x} * (blockDim.x / warp_size);
}

// The loop over lines is the same for all 32 lanes of a warp, so every lane takes part in
// every shuffle.
template <typename S, int per_lane, typename T = compute_t<S>>
__global__ void softmax_warp_kernel(S* out, const S* in, Indexer rest_out, Indexer rest_in,
                                    std::int64_t lines, int n, bool log) {
  const int lane = threadIdx.x % warp_size;
  for (std::int64_t line = global_warp(); line < lines; line += grid_warps()) {
    const S* x = in + rest_in.offset(line);
    S* y = out + rest_out.offset(line);
    T values[per_lane];
    T max_value = negative_infinity<T>();
#pragma unroll
    for (int j = 0; j < per_lane; ++j) {
      const int k = lane + j * warp_size;
      values[j] = k < n ? static_cast<T>(x[k]) : negative_infinity<T>();
      max_value = maximum_value(max_value, values[j]);
    }
    max_value = warp_max(max_value);
    double sum = 0.0;
#pragma unroll
    for (int j = 0; j < per_lane; ++j) {
      if (lane + j * warp_size < n) {
        const T e = math_exp(values[j] - max_value);
        sum += static_cast<double>(e);
        if (!log) values[j] = e;
      }
    }
    sum = warp_sum(sum);
    if (!log) {
      const T inverse = static_cast<T>(1.0 / sum);
#pragma unroll
      for (int j = 0; j < per_lane; ++j) {
        const int k = lane + j * warp_size;
        if (k < n) y[k] = static_cast<S>(values[j] * inverse);
      }
    } else {
      const T log_sum = static_cast<T>(::log(sum));
#pragma unroll
      for (int j = 0; j < per_lane; ++j) {
        const int k = lane + j * warp_size;
        if (k < n) y[k] = static_cast<S>((values[j] - max_value) - log_sum);
      }
    }
  }
}

template <typename S, int per_lane, typename T = compute_t<S>>
__global__ void softmax_backward_warp_kernel(S* dx, const S* dy, const S* y, Indexer rest_dx,
                                             Indexer rest_dy, Indexer rest_y, std::int64_t lines,
                                             int n, bool log) {
  const int lane = threadIdx.x % warp_size;
  for (std::int64_t line = global_warp(); line < lines; line += grid_warps()) {
    const S* grad_out = dy + rest_dy.offset(line);
    const S* output = y + rest_y.offset(line);
    S* grad_in = dx + rest_dx.offset(line);
    T grads[per_lane], outputs[per_lane];
    double sum = 0.0;
#pragma unroll
    for (int j = 0; j < per_lane; ++j) {
      const int k = lane + j * warp_size;
      grads[j] = k < n ? static_cast<T>(grad_out[k]) : T{0};
      outputs[j] = k < n ? static_cast<T>(output[k]) : T{0};
      sum += log ? static_cast<double>(grads[j])
                 : static_cast<double>(grads[j]) * static_cast<double>(outputs[j]);
    }
    const T s = static_cast<T>(warp_sum(sum));
#pragma unroll
    for (int j = 0; j < per_lane; ++j) {
      const int k = lane + j * warp_size;
      if (k < n)
        grad_in[k] =
            static_cast<S>(log ? grads[j] - math_exp(outputs[j]) * s : outputs[j] * (grads[j] - s));
    }
  }
}

// ---- line kernels: any layout, a group of threads per line -------------------------------

// group: 1 (a thread per line), warp_size, or 0 (the whole block). The group index is the
// same for all threads of a group, so they enter and leave the loop together and all reach
// the shuffles and __syncthreads inside group_max and group_sum.
template <int group> __device__ __forceinline__ int group_threads() {
  return group > 0 ? group : static_cast<int>(blockDim.x);
}

template <int group, typename T> __device__ __forceinline__ T group_max(T value, T* shared) {
  if constexpr (group == 1) return value;
  if constexpr (group == warp_size) return warp_max(value);
  if constexpr (group == 0) return block_max(value, shared);
}

template <int group> __device__ __forceinline__ double group_sum(double value, double* shared) {
  if constexpr (group == 1) return value;
  if constexpr (group == warp_size) return warp_sum(value);
  if constexpr (group == 0) return block_sum(value, shared);
}

template <int group, typename S, typename T = compute_t<S>>
__global__ void softmax_lines_kernel(S* out, const S* in, Indexer rest_out, Indexer rest_in,
                                     std::int64_t lines, std::int64_t n, std::int64_t out_stride,
                                     std::int64_t in_stride, bool log) {
  __shared__ T shared_max[warp_size];
  __shared__ double shared_sum[warp_size];
  const int size = group_threads<group>();
  const int lane = threadIdx.x % size;
  const std::int64_t groups = std::int64_t{gridDim.x} * (blockDim.x / size);
  for (std::int64_t line = (blockIdx.x * std::int64_t{blockDim.x} + threadIdx.x) / size;
       line < lines; line += groups) {
    const S* x = in + rest_in.offset(line);
    S* y = out + rest_out.offset(line);
    const auto value = [&](std::int64_t k) { return static_cast<T>(x[k * in_stride]); };
    T max_value = negative_infinity<T>();
    for (std::int64_t k = lane; k < n; k += size) max_value = maximum_value(max_value, value(k));
    max_value = group_max<group>(max_value, shared_max);
    double sum = 0.0;
    for (std::int64_t k = lane; k < n; k += size)
      sum += static_cast<double>(math_exp(value(k) - max_value));
    sum = group_sum<group>(sum, shared_sum);
    if (!log) {
      const T inverse = static_cast<T>(1.0 / sum);
      for (std::int64_t k = lane; k < n; k += size)
        y[k * out_stride] = static_cast<S>(math_exp(value(k) - max_value) * inverse);
    } else {
      const T log_sum = static_cast<T>(::log(sum));
      for (std::int64_t k = lane; k < n; k += size)
        y[k * out_stride] = static_cast<S>((value(k) - max_value) - log_sum);
    }
  }
}

template <int group, typename S, typename T = compute_t<S>>
__global__ void softmax_backward_lines_kernel(S* dx, const S* dy, const S* y, Indexer rest_dx,
                                              Indexer rest_dy, Indexer rest_y, std::int64_t lines,
                                              std::int64_t n, std::int64_t dx_stride,
                                              std::int64_t dy_stride, std::int64_t y_stride,
                                              bool log) {
  __shared__ double shared_sum[warp_size];
  const int size = group_threads<group>();
  const int lane = threadIdx.x % size;
  const std::int64_t groups = std::int64_t{gridDim.x} * (blockDim.x / size);
  for (std::int64_t line = (blockIdx.x * std::int64_t{blockDim.x} + threadIdx.x) / size;
       line < lines; line += groups) {
    const S* grad_out = dy + rest_dy.offset(line);
    const S* output = y + rest_y.offset(line);
    S* grad_in = dx + rest_dx.offset(line);
    double sum = 0.0;
    for (std::int64_t k = lane; k < n; k += size) {
      const double g = static_cast<T>(grad_out[k * dy_stride]);
      sum += log ? g : g * static_cast<T>(output[k * y_stride]);
    }
    const T s = static_cast<T>(group_sum<group>(sum, shared_sum));
    for (std::int64_t k = lane; k < n; k += size) {
      const T g = static_cast<T>(grad_out[k * dy_stride]), o = static_cast<T>(output[k * y_stride]);
      grad_in[k * dx_stride] = static_cast<S>(log ? g - math_exp(o) * s : o * (g - s));
    }
  }
}

// ---- planning -------------------------------------------------------------------------------

// Lines along `dim` of N same-shaped tensors: their length, each tensor's stride along the
// dim, and Indexers over the other dims (line i starts at rest[k].offset(i) in tensor k).
template <int N> struct LinePlan {
  std::int64_t lines = 0;
  std::int64_t length = 1;
  std::int64_t strides[N] = {};
  Indexer rest[N];
  bool unit_stride = true;  // every tensor contiguous along the dim
  bool columns = false;     // adjacent lines adjacent in memory in every tensor
};

template <int N>
LinePlan<N> make_line_plan(const TensorRef* const (&tensors)[N], int dim, const char* op) {
  const TensorRef& first = *tensors[0];
  const int rank = static_cast<int>(first.rank());
  NG_CHECK(rank == 0 || (dim >= 0 && dim < rank), op, "dim ", dim, " out of range for rank ", rank);
  LinePlan<N> plan;
  TensorRef rest[N];
  for (int k = 0; k < N; ++k) {
    rest[k].data = tensors[k]->data;
    rest[k].dtype = tensors[k]->dtype;
    for (int d = 0; d < rank; ++d) {
      if (d == dim) continue;
      rest[k].shape.push_back(first.shape[d]);
      rest[k].strides.push_back(tensors[k]->strides[d]);
    }
    plan.strides[k] = rank == 0 ? 1 : tensors[k]->strides[dim];  // a scalar is one line of 1
  }
  plan.length = rank == 0 ? 1 : first.shape[dim];
  plan.lines = rest[0].numel();
  const TensorRef* rest_pointers[N];
  for (int k = 0; k < N; ++k) rest_pointers[k] = &rest[k];
  make_indexers(rest_pointers, plan.rest, op);
  const int rest_rank = plan.rest[0].rank;
  plan.columns = rest_rank > 0;
  for (int k = 0; k < N; ++k) {
    plan.unit_stride = plan.unit_stride && (plan.strides[k] == 1 || plan.length == 1);
    plan.columns = plan.columns && plan.rest[k].strides[rest_rank - 1] == 1 && plan.strides[k] != 1;
  }
  return plan;
}

// Lines up to this long, contiguous along the dim, take the warp kernels.
constexpr std::int64_t warp_line_limit = 32 * warp_size;

// Calls launch(per_lane) with the smallest per_lane in {1, 2, 4, ..., 32} with n <= 32 per_lane.
template <typename Launch> void with_per_lane(std::int64_t n, Launch launch) {
  if (n <= warp_size) return launch(std::integral_constant<int, 1>{});
  if (n <= 2 * warp_size) return launch(std::integral_constant<int, 2>{});
  if (n <= 4 * warp_size) return launch(std::integral_constant<int, 4>{});
  if (n <= 8 * warp_size) return launch(std::integral_constant<int, 8>{});
  if (n <= 16 * warp_size) return launch(std::integral_constant<int, 16>{});
  return launch(std::integral_constant<int, 32>{});
}

// The group of the line kernels: a thread per line when lines are adjacent in memory and many,
// else a warp for short lines and a block for long ones.
template <int N> int line_group(const LinePlan<N>& plan) {
  if (plan.columns && plan.lines >= 1024) return 1;
  if (plan.length <= 2048 && !plan.unit_stride) return warp_size;
  return 0;
}

// Calls launch(group, blocks) for the line kernels with the group line_group picks.
template <int N, typename Launch>
void with_line_group(const Context& context, const LinePlan<N>& plan, Launch launch) {
  switch (line_group(plan)) {
    case 1:
      return launch(std::integral_constant<int, 1>{}, grid_for(plan.lines, context));
    case warp_size:
      return launch(std::integral_constant<int, warp_size>{},
                    grid_for(plan.lines * warp_size, context));
    default:
      return launch(std::integral_constant<int, 0>{},
                    grid_for(plan.lines * threads_per_block, context));
  }
}

template <typename S>
void softmax_typed(const Context& context, const TensorRef& out, const TensorRef& in, int dim,
                   bool log) {
  const TensorRef* const tensors[2] = {&out, &in};
  const auto plan = make_line_plan(tensors, dim, "cuda softmax");
  if (plan.lines == 0 || plan.length == 0) return;
  const cudaStream_t stream = context.stream;
  if (plan.unit_stride && plan.length <= warp_line_limit) {
    with_per_lane(plan.length, [&](auto per_lane) {
      softmax_warp_kernel<S, decltype(per_lane)::value>
          <<<grid_for(plan.lines * warp_size, context), threads_per_block, 0, stream>>>(
              out.ptr<S>(), in.ptr<const S>(), plan.rest[0], plan.rest[1], plan.lines,
              static_cast<int>(plan.length), log);
    });
  } else {
    with_line_group(context, plan, [&](auto group, unsigned blocks) {
      softmax_lines_kernel<decltype(group)::value, S><<<blocks, threads_per_block, 0, stream>>>(
          out.ptr<S>(), in.ptr<const S>(), plan.rest[0], plan.rest[1], plan.lines, plan.length,
          plan.strides[0], plan.strides[1], log);
    });
  }
  NG_CUDA_CHECK_LAUNCH();
}

template <typename S>
void softmax_backward_typed(const Context& context, const TensorRef& dx, const TensorRef& dy,
                            const TensorRef& y, int dim, bool log) {
  const TensorRef* const tensors[3] = {&dx, &dy, &y};
  const auto plan = make_line_plan(tensors, dim, "cuda softmax_backward");
  if (plan.lines == 0 || plan.length == 0) return;
  const cudaStream_t stream = context.stream;
  if (plan.unit_stride && plan.length <= warp_line_limit) {
    with_per_lane(plan.length, [&](auto per_lane) {
      softmax_backward_warp_kernel<S, decltype(per_lane)::value>
          <<<grid_for(plan.lines * warp_size, context), threads_per_block, 0, stream>>>(
              dx.ptr<S>(), dy.ptr<const S>(), y.ptr<const S>(), plan.rest[0], plan.rest[1],
              plan.rest[2], plan.lines, static_cast<int>(plan.length), log);
    });
  } else {
    with_line_group(context, plan, [&](auto group, unsigned blocks) {
      softmax_backward_lines_kernel<decltype(group)::value, S>
          <<<blocks, threads_per_block, 0, stream>>>(
              dx.ptr<S>(), dy.ptr<const S>(), y.ptr<const S>(), plan.rest[0], plan.rest[1],
              plan.rest[2], plan.lines, plan.length, plan.strides[0], plan.strides[1],
              plan.strides[2], log);
    });
  }
  NG_CUDA_CHECK_LAUNCH();
}

}  // namespace

void CudaBackend::softmax(const TensorRef& out, const TensorRef& in, int dim, bool log) {
  DeviceGuard guard(context_.device);
  const Context& context = context_;
  NG_CHECK(out.dtype == in.dtype, "cuda softmax", "out is ", out.dtype, " but in is ", in.dtype);
  dispatch_floating_or_bfloat16(in.dtype, "cuda softmax", [&](auto tag) {
    softmax_typed<typename decltype(tag)::type>(context, out, in, dim, log);
  });
}

void CudaBackend::softmax_backward(const TensorRef& dx, const TensorRef& dy, const TensorRef& y,
                                   int dim, bool log) {
  DeviceGuard guard(context_.device);
  const Context& context = context_;
  NG_CHECK(dx.dtype == dy.dtype && dx.dtype == y.dtype, "cuda softmax_backward",
           "dtypes differ: dx ", dx.dtype, ", dy ", dy.dtype, ", y ", y.dtype);
  dispatch_floating_or_bfloat16(dx.dtype, "cuda softmax_backward", [&](auto tag) {
    softmax_backward_typed<typename decltype(tag)::type>(context, dx, dy, y, dim, log);
  });
}

}  // namespace normgrad::backend::cuda
