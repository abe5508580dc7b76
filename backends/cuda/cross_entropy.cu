// Softmax cross-entropy on the GPU, fused (backend.h gives the formulas).
//
// Forward: one row per warp (short rows) or per block (long ones). Each thread walks its values
// once, keeping a running maximum m and the sum s of exp(x - m), rescaled when m grows (the
// online softmax), so the row is read once however long it is. The threads' (m, s) pairs are
// merged by a butterfly over the warp and then over the warps in warp order, a fixed order;
// s is kept in double. lse = m + log(s), and the loss follows from x_t and, with label smoothing,
// mean(x). Backward: dx = dloss (exp(x - lse) - q), elementwise, from the saved lse.
//
// Targets are checked on the device, in the same kernels: a row whose target is neither a class
// nor ignore_index writes its row number into a flag with an integer atomicMin, so the flag ends
// as the first bad row whatever the schedule. The method copies the flag back (one wait for the
// stream) and throws an Error naming that row and its target.

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "backends/cuda/cuda_backend.h"
#include "backends/cuda/device_guard.h"
#include "backends/cuda/launch.cuh"
#include "backends/dtype_dispatch.h"
#include "base/error.h"

namespace normgrad::backend::cuda {

namespace {

constexpr int warp_mode_threads = 128;  // 4 rows at a time
constexpr int block_mode_threads = 256;
constexpr std::int64_t warp_mode_max_n = 1024;
constexpr unsigned long long no_bad_row = ~0ull;

// A running maximum and the sum of exp(x - max) below it.
struct MaxSum {
  double max;  // a value of the row (or -inf), kept exactly in double
  double sum;
};

// Adds value v to (m, s). -inf values add exp(-inf) = 0 and never become the maximum while it
// is -inf, so a row that starts with -inf stays finite; NaN propagates through the sum.
template <typename T> __device__ __forceinline__ void add_value(MaxSum& acc, T v) {
  const double value = static_cast<double>(v);
  if (value > acc.max) {
    const double rescale =
        acc.max == -INFINITY ? 0.0 : static_cast<double>(exp(static_cast<T>(acc.max - value)));
    acc.sum = acc.sum * rescale + 1.0;
    acc.max = value;
  } else if (value != -INFINITY) {
    acc.sum += static_cast<double>(exp(static_cast<T>(value - acc.max)));
  }
}

template <typename T> __device__ __forceinline__ MaxSum merge(const MaxSum& a, const MaxSum& b) {
  const double m = a.max > b.max ? a.max : b.max;
  if (m == -INFINITY) return {m, a.sum + b.sum};
  const double scale_a =
      a.max == -INFINITY ? 0.0 : static_cast<double>(exp(static_cast<T>(a.max - m)));
  const double scale_b =
      b.max == -INFINITY ? 0.0 : static_cast<double>(exp(static_cast<T>(b.max - m)));
  return {m, a.sum * scale_a + b.sum * scale_b};
}

template <typename T> __device__ __forceinline__ void warp_merge(MaxSum& acc, double& total) {
  for (int offset = warp_size / 2; offset > 0; offset /= 2) {
    const MaxSum other{__shfl_xor_sync(0xffffffffu, acc.max, offset),
                       __shfl_xor_sync(0xffffffffu, acc.sum, offset)};
    acc = merge<T>(acc, other);
    total += __shfl_xor_sync(0xffffffffu, total, offset);
  }
}

// The row's (max, sum of exp) and sum of values, over a warp or the block, to every thread.
// Lanes of a warp may differ in the last bits (each merges in its own order); every lane's
// result is a fixed function of the row, so lane 0's, which is used, is the same on every run.
template <typename T, bool kWarpPerRow>
__device__ void group_merge(MaxSum& acc, double& total, MaxSum* shared_acc, double* shared_total) {
  warp_merge<T>(acc, total);
  if constexpr (!kWarpPerRow) {
    const int lane = static_cast<int>(threadIdx.x) % warp_size;
    const int warp = static_cast<int>(threadIdx.x) / warp_size;
    const int warps = static_cast<int>(blockDim.x) / warp_size;
    __syncthreads();  // the previous row's readers are done
    if (lane == 0) {
      shared_acc[warp] = acc;
      shared_total[warp] = total;
    }
    __syncthreads();
    if (warp == 0) {
      acc = lane < warps ? shared_acc[lane] : MaxSum{-INFINITY, 0.0};
      total = lane < warps ? shared_total[lane] : 0.0;
      warp_merge<T>(acc, total);
    }
  }
}

template <typename T> struct ForwardArgs {
  std::int64_t rows = 0, n = 0, ignore_index = -100;
  double smoothing = 0;
  const T* logits = nullptr;
  const std::int64_t* targets = nullptr;
  T* loss = nullptr;
  T* lse = nullptr;
  unsigned long long* bad_row = nullptr;
};

template <typename T, bool kWarpPerRow>
__global__ void cross_entropy_forward_kernel(const ForwardArgs<T> args) {
  __shared__ MaxSum shared_acc[warp_size];
  __shared__ double shared_total[warp_size];
  const int lane =
      kWarpPerRow ? static_cast<int>(threadIdx.x) % warp_size : static_cast<int>(threadIdx.x);
  const int size = kWarpPerRow ? warp_size : static_cast<int>(blockDim.x);
  const int groups = kWarpPerRow ? static_cast<int>(blockDim.x) / warp_size : 1;
  const int group = kWarpPerRow ? static_cast<int>(threadIdx.x) / warp_size : 0;
  const std::int64_t n = args.n;
  for (std::int64_t row = blockIdx.x * std::int64_t{groups} + group; row < args.rows;
       row += std::int64_t{gridDim.x} * groups) {
    const std::int64_t target = args.targets[row];  // the same for the whole group
    if (target == args.ignore_index || n == 0 || target < 0 || target >= n) {
      if (lane == 0) {
        if (target != args.ignore_index)
          atomicMin(args.bad_row, static_cast<unsigned long long>(row));
        args.loss[row] = T(0);
        args.lse[row] = T(0);
      }
      continue;
    }
    const T* x = args.logits + row * n;
    MaxSum acc{-INFINITY, 0.0};
    double total = 0;
    for (std::int64_t j = lane; j < n; j += size) {
      const T v = x[j];
      add_value(acc, v);
      total += static_cast<double>(v);
    }
    group_merge<T, kWarpPerRow>(acc, total, shared_acc, shared_total);
    if (lane == 0) {
      const double lse = acc.max + log(acc.sum);
      double value = (1 - args.smoothing) * (lse - static_cast<double>(x[target]));
      if (args.smoothing != 0) value += args.smoothing * (lse - total / static_cast<double>(n));
      args.loss[row] = static_cast<T>(value);
      args.lse[row] = static_cast<T>(lse);
    }
  }
}

template <typename T> struct BackwardArgs {
  std::int64_t rows = 0, n = 0, ignore_index = -100;
  double smoothing = 0;
  const T* logits = nullptr;
  const std::int64_t* targets = nullptr;
  const T* dloss = nullptr;
  const T* lse = nullptr;
  T* dlogits = nullptr;
  unsigned long long* bad_row = nullptr;
};

// Rows over gridDim.y, columns over gridDim.x: no division per element.
template <typename T> __global__ void cross_entropy_backward_kernel(const BackwardArgs<T> args) {
  const std::int64_t n = args.n;
  const T uniform = static_cast<T>(args.smoothing / static_cast<double>(n));
  const T on_target = static_cast<T>(1 - args.smoothing);
  for (std::int64_t row = blockIdx.y; row < args.rows; row += gridDim.y) {
    const std::int64_t target = args.targets[row];
    const bool ignored = target == args.ignore_index;
    const bool bad = !ignored && (target < 0 || target >= n);
    if (bad && blockIdx.x == 0 && threadIdx.x == 0)
      atomicMin(args.bad_row, static_cast<unsigned long long>(row));
    const T* x = args.logits + row * n;
    T* dx = args.dlogits + row * n;
    const T scale = args.dloss[row];
    const T shift = args.lse[row];
    for (std::int64_t j = blockIdx.x * std::int64_t{blockDim.x} + threadIdx.x; j < n;
         j += std::int64_t{gridDim.x} * blockDim.x) {
      if (ignored || bad) {
        dx[j] = T(0);
        continue;
      }
      T value = (exp(x[j] - shift) - uniform) * scale;
      if (j == target) value -= on_target * scale;
      dx[j] = value;
    }
  }
}

void check_shapes(const TensorRef& logits, const TensorRef& targets, const char* op) {
  NG_CHECK(logits.rank() == 2 && targets.rank() == 1 && targets.shape[0] == logits.shape[0], op,
           "expects logits [rows, n] and targets [rows], got ", logits.shape, " and ",
           targets.shape);
  NG_CHECK(targets.dtype == DType::Int64, op, "targets must be int64, got ", targets.dtype);
  NG_CHECK(is_contiguous(logits) && is_contiguous(targets), op,
           "logits and targets must be contiguous");
}

// Waits for the stream and throws when a kernel flagged a bad target.
void report_bad_target(const Context& context, const unsigned long long* flag,
                       const TensorRef& targets, std::int64_t n, std::int64_t ignore_index,
                       const char* op) {
  if (capturing(context)) return;  // nothing has run yet: a captured step trusts its targets
  unsigned long long row = no_bad_row;
  NG_CUDA_CHECK(cudaMemcpyAsync(&row, flag, sizeof(row), cudaMemcpyDeviceToHost, context.stream));
  NG_CUDA_CHECK(cudaStreamSynchronize(context.stream));
  if (context.host_waits != nullptr) context.host_waits->fetch_add(1, std::memory_order_relaxed);
  if (row == no_bad_row) return;
  std::int64_t target = 0;
  NG_CUDA_CHECK(cudaMemcpyAsync(&target, targets.ptr<const std::int64_t>() + row, sizeof(target),
                                cudaMemcpyDeviceToHost, context.stream));
  NG_CUDA_CHECK(cudaStreamSynchronize(context.stream));
  NG_CHECK(false, op, "target ", target, " of row ", row, " is not a class in [0, ", n,
           ") nor the ignore_index ", ignore_index);
}

}  // namespace

void CudaBackend::cross_entropy_forward(const CrossEntropyParams& params, const TensorRef& loss,
                                        const TensorRef& log_normaliser, const TensorRef& logits,
                                        const TensorRef& targets) {
  DeviceGuard guard(context_.device);
  const Context& context = context_;
  const char* op = "cuda cross_entropy_forward";
  check_shapes(logits, targets, op);
  NG_CHECK(loss.dtype == logits.dtype && log_normaliser.dtype == logits.dtype, op,
           "dtypes differ: logits ", logits.dtype, ", loss ", loss.dtype, ", log_normaliser ",
           log_normaliser.dtype);
  NG_CHECK(is_contiguous(loss) && is_contiguous(log_normaliser), op,
           "loss and log_normaliser must be contiguous");
  const std::int64_t rows = logits.shape[0], n = logits.shape[1];
  if (rows == 0) return;
  Workspace flag(context, sizeof(unsigned long long));
  NG_CUDA_CHECK(cudaMemsetAsync(flag.data(), 0xff, sizeof(unsigned long long), context.stream));
  dispatch_floating(logits.dtype, op, [&](auto tag) {
    using T = typename decltype(tag)::type;
    ForwardArgs<T> args;
    args.rows = rows;
    args.n = n;
    args.ignore_index = params.ignore_index;
    args.smoothing = params.label_smoothing;
    args.logits = logits.ptr<const T>();
    args.targets = targets.ptr<const std::int64_t>();
    args.loss = loss.ptr<T>();
    args.lse = log_normaliser.ptr<T>();
    args.bad_row = flag.as<unsigned long long>();
    const bool warp_per_row = n <= warp_mode_max_n;
    const std::int64_t rows_per_block = warp_per_row ? warp_mode_threads / warp_size : 1;
    const unsigned grid = static_cast<unsigned>(
        std::clamp<std::int64_t>((rows + rows_per_block - 1) / rows_per_block, 1,
                                 std::int64_t{context.multiprocessors} * 32));
    if (warp_per_row)
      cross_entropy_forward_kernel<T, true><<<grid, warp_mode_threads, 0, context.stream>>>(args);
    else
      cross_entropy_forward_kernel<T, false><<<grid, block_mode_threads, 0, context.stream>>>(args);
    NG_CUDA_CHECK_LAUNCH();
  });
  report_bad_target(context, flag.as<unsigned long long>(), targets, n, params.ignore_index, op);
}

void CudaBackend::cross_entropy_backward(const CrossEntropyParams& params, const TensorRef& dlogits,
                                         const TensorRef& dloss, const TensorRef& logits,
                                         const TensorRef& targets,
                                         const TensorRef& log_normaliser) {
  DeviceGuard guard(context_.device);
  const Context& context = context_;
  const char* op = "cuda cross_entropy_backward";
  check_shapes(logits, targets, op);
  NG_CHECK(dlogits.dtype == logits.dtype && dloss.dtype == logits.dtype &&
               log_normaliser.dtype == logits.dtype,
           op, "dtypes differ: logits ", logits.dtype, ", dlogits ", dlogits.dtype, ", dloss ",
           dloss.dtype, ", log_normaliser ", log_normaliser.dtype);
  NG_CHECK(is_contiguous(dlogits) && is_contiguous(dloss) && is_contiguous(log_normaliser), op,
           "dlogits, dloss and log_normaliser must be contiguous");
  const std::int64_t rows = logits.shape[0], n = logits.shape[1];
  if (rows == 0) return;
  Workspace flag(context, sizeof(unsigned long long));
  NG_CUDA_CHECK(cudaMemsetAsync(flag.data(), 0xff, sizeof(unsigned long long), context.stream));
  dispatch_floating(logits.dtype, op, [&](auto tag) {
    using T = typename decltype(tag)::type;
    BackwardArgs<T> args;
    args.rows = rows;
    args.n = n;
    args.ignore_index = params.ignore_index;
    args.smoothing = params.label_smoothing;
    args.logits = logits.ptr<const T>();
    args.targets = targets.ptr<const std::int64_t>();
    args.dloss = dloss.ptr<const T>();
    args.lse = log_normaliser.ptr<const T>();
    args.dlogits = dlogits.ptr<T>();
    args.bad_row = flag.as<unsigned long long>();
    const std::int64_t column_blocks =
        std::clamp<std::int64_t>((n + threads_per_block - 1) / threads_per_block, 1, 64);
    const std::int64_t target_blocks = std::int64_t{context.multiprocessors} * 16;
    const std::int64_t row_blocks = std::clamp<std::int64_t>(target_blocks / column_blocks, 1,
                                                             std::min<std::int64_t>(rows, 65535));
    const dim3 grid(static_cast<unsigned>(column_blocks), static_cast<unsigned>(row_blocks));
    cross_entropy_backward_kernel<T><<<grid, threads_per_block, 0, context.stream>>>(args);
    NG_CUDA_CHECK_LAUNCH();
  });
  report_bad_target(context, flag.as<unsigned long long>(), targets, n, params.ignore_index, op);
}

}  // namespace normgrad::backend::cuda
