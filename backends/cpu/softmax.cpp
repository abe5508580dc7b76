// Softmax and log-softmax along one dim, forward and backward, fused.
//
// Forward, per line x along the dim (m = max x, the shift that keeps exp from overflowing):
//   softmax:     y = exp(x - m) / sum exp(x - m)
//   log_softmax: y = (x - m) - log(sum exp(x - m))
// A unit-stride float32 line takes two passes over x (vector_exp.h): the max, then exp(x - m)
// written to y and summed in the same vector loop; the scaling of y (or, for log_softmax,
// y = (x - m) - log sum) follows while the line is still in cache. Everywhere else float32
// exponentials go through the same vector exp, a chunk at a time; float64 keeps std::exp.
// Backward, from dy and the forward output y:
//   softmax:     dx = y * (dy - sum(dy * y))
//   log_softmax: dx = dy - exp(y) * sum(dy)
// The other dims are iterated like any strided layout. When they include a unit-stride dim
// and the softmax dim does not (softmax over dim 0 of a row-major matrix), up to 256 adjacent
// lines are processed together, with the inner loops over the unit-stride columns. Sums are
// kept in double (across chunks of pairwise float sums in the one-line form).

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "backends/bfloat16_widening.h"
#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/elementwise_math.h"
#include "backends/cpu/pairwise.h"
#include "backends/cpu/row_kernel.h"
#include "backends/cpu/simd/vector_exp.h"
#include "backends/cpu/strided_loop.h"
#include "backends/dtype_dispatch.h"

namespace normgrad::backend::cpu {

namespace {

constexpr std::int64_t softmax_column_block = 256;

// Lines along `dim` of N same-shaped tensors (operand 0 written), with their dim strides.
template <int N> struct LinePlan {
  StridedLayout<N> rest;  // every dim except `dim`
  std::int64_t length = 0;
  std::int64_t strides[N] = {};
};

template <int N>
LinePlan<N> make_line_plan(const std::array<const TensorRef*, N>& tensors, int dim,
                           const char* op) {
  LinePlan<N> plan;
  std::array<Operand, N> operands;
  for (int k = 0; k < N; ++k) {
    operands[k] = operand(*tensors[k]);
    plan.strides[k] = tensors[k]->rank() == 0 ? 0 : tensors[k]->strides[dim];
  }
  const TensorRef& out = *tensors[0];
  const int rank = static_cast<int>(out.rank());
  plan.length = rank == 0 ? 1 : out.shape[dim];
  plan.rest = make_layout<N>(out.shape.data(), rank, operands, op, false, ~(1ull << dim));
  return plan;
}

// Calls line(pointers, width) for blocks of `width` lines: width = 1 in the row form; in the
// column form, `width` adjacent lines whose elements sit at unit stride from `pointers`.
template <int N, typename Line>
void for_each_line(const LinePlan<N>& plan, const std::array<const TensorRef*, N>& tensors,
                   Line line) {
  if (plan.rest.numel == 0 || plan.length == 0) return;
  std::array<char*, N> base;
  std::array<std::int64_t, N> element_sizes;
  for (int k = 0; k < N; ++k) {
    base[k] = static_cast<char*>(tensors[k]->data);
    element_sizes[k] = static_cast<std::int64_t>(element_size(tensors[k]->dtype));
  }
  bool columns = plan.rest.rank > 0;
  for (int k = 0; k < N; ++k)
    columns = columns && plan.rest.inner_strides[k] == 1 && plan.strides[k] != 1;
  if (!columns) {
    const auto kernel = [&](const std::array<char*, N>& pointers, const std::int64_t* strides,
                            std::int64_t count, std::int64_t) {
      for (std::int64_t i = 0; i < count; ++i) {
        std::array<char*, N> row = pointers;
        for (int k = 0; k < N; ++k) row[k] += i * strides[k] * element_sizes[k];
        line(row, std::int64_t{1});
      }
    };
    parallel_for(plan.rest.numel, plan.length, [&](std::int64_t begin, std::int64_t end) {
      walk_range(plan.rest, base, begin, end, kernel);
    });
    return;
  }
  const std::int64_t columns_per_line = plan.rest.sizes[plan.rest.rank - 1];
  const std::int64_t blocks = (columns_per_line + softmax_column_block - 1) / softmax_column_block;
  const std::int64_t tasks = plan.rest.numel / columns_per_line * blocks;
  parallel_for(tasks, plan.length * std::min(columns_per_line, softmax_column_block),
               [&](std::int64_t begin, std::int64_t end) {
                 for (std::int64_t task = begin; task < end; ++task) {
                   const std::int64_t first_column = task % blocks * softmax_column_block;
                   const auto offsets = offsets_of(plan.rest, task / blocks * columns_per_line);
                   std::array<char*, N> pointers;
                   for (int k = 0; k < N; ++k)
                     pointers[k] = base[k] + offsets[k] + first_column * element_sizes[k];
                   line(pointers, std::min(softmax_column_block, columns_per_line - first_column));
                 }
               });
}

constexpr std::int64_t line_chunk = 256;

// values[i] = exp(values[i]) over a unit-stride buffer.
template <typename T> void exp_in_place(T* values, std::int64_t count) {
  if constexpr (std::is_same_v<T, float>)
    exp_row(values, values, count);
  else
    for (std::int64_t i = 0; i < count; ++i) values[i] = std::exp(values[i]);
}

// A unit-stride float32 line: y = exp(x - m) and its sum in one pass, then the scaling.
void softmax_contiguous_row(float* y, const float* x, std::int64_t n, bool log) {
  // In a contiguous tensor the next line starts where this one ends. Asking for its first
  // 4 KiB now lets those loads overlap this line's arithmetic; the hardware prefetchers stop at
  // page boundaries, and a 1024-float line is one page. A prefetch never faults, so past the
  // last line, or where lines are not adjacent, it only costs the instruction.
  // (The address is formed as an integer: a pointer past the end of x would be undefined.)
  const std::uintptr_t next_line = reinterpret_cast<std::uintptr_t>(x + n);
  for (std::int64_t k = 0; k < std::min<std::int64_t>(n, 1024); k += 16)
    __builtin_prefetch(reinterpret_cast<const void*>(next_line + k * sizeof(float)));
  const float max_value = max_row(x, n);
  const double sum = exp_shifted_sum_row(log ? nullptr : y, x, n, max_value);
  if (!log) {
    const float inverse = static_cast<float>(1.0 / sum);
#pragma omp simd
    for (std::int64_t k = 0; k < n; ++k) y[k] *= inverse;
  } else {
    const float log_sum = static_cast<float>(std::log(sum));
#pragma omp simd
    for (std::int64_t k = 0; k < n; ++k) y[k] = (x[k] - max_value) - log_sum;
  }
}

// One line at a time: x[k * sx] -> y[k * so] for k < n. The exponentials are taken a chunk at
// a time into a small buffer, then summed pairwise, the chunk sums in double: a running sum
// carried across the calls to exp would be spilled around every call and make the loop one
// long dependency chain.
template <typename T>
void softmax_line(T* y, const T* x, std::int64_t n, std::int64_t so, std::int64_t sx, bool log) {
  const T max_value = reduce_row<MaxCombine<T>>(x, n, sx);
  T exps[line_chunk];
  double sum = 0.0;
  for (std::int64_t first = 0; first < n; first += line_chunk) {
    const std::int64_t count = std::min(line_chunk, n - first);
    for (std::int64_t k = 0; k < count; ++k) exps[k] = x[(first + k) * sx] - max_value;
    exp_in_place(exps, count);
    sum += reduce_row<SumCombine<T>>(exps, count, 1);
    if (!log)
      for (std::int64_t k = 0; k < count; ++k) y[(first + k) * so] = exps[k];
  }
  if (!log) {
    const T inverse = static_cast<T>(1.0 / sum);
    for (std::int64_t k = 0; k < n; ++k) y[k * so] *= inverse;
  } else {
    const T log_sum = static_cast<T>(std::log(sum));
    for (std::int64_t k = 0; k < n; ++k) y[k * so] = (x[k * sx] - max_value) - log_sum;
  }
}

// `width` adjacent lines at once, their elements at unit stride: the same three passes with
// one accumulator per line, the inner loops running over the lines.
template <typename T>
void softmax_columns(T* y, const T* x, std::int64_t n, std::int64_t so, std::int64_t sx,
                     std::int64_t width, bool log) {
  T max_value[softmax_column_block];
  double sum[softmax_column_block];
  for (std::int64_t j = 0; j < width; ++j) {
    max_value[j] = x[j];
    sum[j] = 0.0;
  }
  for (std::int64_t k = 1; k < n; ++k) {
#pragma omp simd
    for (std::int64_t j = 0; j < width; ++j)
      max_value[j] = maximum_value(max_value[j], x[k * sx + j]);
  }
  T exps[softmax_column_block];
  for (std::int64_t k = 0; k < n; ++k) {
#pragma omp simd
    for (std::int64_t j = 0; j < width; ++j) exps[j] = x[k * sx + j] - max_value[j];
    exp_in_place(exps, width);
#pragma omp simd
    for (std::int64_t j = 0; j < width; ++j) sum[j] += exps[j];
    if (!log) std::copy(exps, exps + width, y + k * so);
  }
  T factor[softmax_column_block];  // 1 / sum, or log(sum)
  for (std::int64_t j = 0; j < width; ++j)
    factor[j] = static_cast<T>(log ? std::log(sum[j]) : 1.0 / sum[j]);
  for (std::int64_t k = 0; k < n; ++k) {
    if (log) {
#pragma omp simd
      for (std::int64_t j = 0; j < width; ++j)
        y[k * so + j] = (x[k * sx + j] - max_value[j]) - factor[j];
    } else {
#pragma omp simd
      for (std::int64_t j = 0; j < width; ++j) y[k * so + j] *= factor[j];
    }
  }
}

template <typename T>
void softmax_forward(const TensorRef& out, const TensorRef& in, int dim, bool log) {
  const auto plan = make_line_plan<2>({&out, &in}, dim, "cpu softmax");
  const std::int64_t n = plan.length, so = plan.strides[0], sx = plan.strides[1];
  for_each_line<2>(plan, {&out, &in},
                   [&](const std::array<char*, 2>& pointers, std::int64_t width) {
                     T* y = reinterpret_cast<T*>(pointers[0]);
                     const T* x = reinterpret_cast<const T*>(pointers[1]);
                     if (width == 1) {
                       if constexpr (std::is_same_v<T, float>) {
                         if (so == 1 && sx == 1) return softmax_contiguous_row(y, x, n, log);
                       }
                       if (so == 1 && sx == 1)
                         softmax_line(y, x, n, std::int64_t{1}, std::int64_t{1}, log);
                       else
                         softmax_line(y, x, n, so, sx, log);
                     } else {
                       softmax_columns(y, x, n, so, sx, width, log);
                     }
                   });
}

// Backward, one line: s = sum(dy * y) (softmax) or sum(dy) (log_softmax), pairwise, then dx.
// unit_stride: every stride is 1, and the loops, knowing it, vectorise.
template <bool unit_stride, typename T>
NORMGRAD_ROW_KERNEL void softmax_backward_line(T* dx, const T* dy, const T* y, std::int64_t n,
                                               std::int64_t dx_stride, std::int64_t dy_stride,
                                               std::int64_t y_stride, bool log) {
  const std::int64_t sdx = unit_stride ? 1 : dx_stride, sdy = unit_stride ? 1 : dy_stride,
                     sy = unit_stride ? 1 : y_stride;
  T buffer[line_chunk];
  if (log) {
    const T s = reduce_row<SumCombine<T>>(dy, n, sdy);
    for (std::int64_t first = 0; first < n; first += line_chunk) {
      const std::int64_t count = std::min(line_chunk, n - first);
#pragma omp simd
      for (std::int64_t k = 0; k < count; ++k) buffer[k] = y[(first + k) * sy];
      exp_in_place(buffer, count);
#pragma omp simd
      for (std::int64_t k = 0; k < count; ++k)
        dx[(first + k) * sdx] = dy[(first + k) * sdy] - buffer[k] * s;
    }
    return;
  }
  double sum = 0.0;
  for (std::int64_t first = 0; first < n; first += line_chunk) {
    const std::int64_t count = std::min(line_chunk, n - first);
#pragma omp simd
    for (std::int64_t k = 0; k < count; ++k)
      buffer[k] = dy[(first + k) * sdy] * y[(first + k) * sy];
    sum += reduce_row<SumCombine<T>>(buffer, count, 1);
  }
  const T s = static_cast<T>(sum);
  // Each dx[k] is written after its own dy[k] and y[k] are read, so dx may be dy itself (the
  // same memory with the same strides).
#pragma omp simd
  for (std::int64_t k = 0; k < n; ++k) dx[k * sdx] = y[k * sy] * (dy[k * sdy] - s);
}

template <typename T>
NORMGRAD_ROW_KERNEL void softmax_backward_columns(T* dx, const T* dy, const T* y, std::int64_t n,
                                                  std::int64_t sdx, std::int64_t sdy,
                                                  std::int64_t sy, std::int64_t width, bool log) {
  double sum[softmax_column_block];
  for (std::int64_t j = 0; j < width; ++j) sum[j] = 0.0;
  for (std::int64_t k = 0; k < n; ++k) {
#pragma omp simd
    for (std::int64_t j = 0; j < width; ++j)
      sum[j] += log ? dy[k * sdy + j] : dy[k * sdy + j] * y[k * sy + j];
  }
  T s[softmax_column_block];
  for (std::int64_t j = 0; j < width; ++j) s[j] = static_cast<T>(sum[j]);
  T exps[softmax_column_block];
  for (std::int64_t k = 0; k < n; ++k) {
    if (log) {
#pragma omp simd
      for (std::int64_t j = 0; j < width; ++j) exps[j] = y[k * sy + j];
      exp_in_place(exps, width);
#pragma omp simd
      for (std::int64_t j = 0; j < width; ++j) dx[k * sdx + j] = dy[k * sdy + j] - exps[j] * s[j];
    } else {
#pragma omp simd
      for (std::int64_t j = 0; j < width; ++j)
        dx[k * sdx + j] = y[k * sy + j] * (dy[k * sdy + j] - s[j]);
    }
  }
}

template <typename T>
void softmax_backward_typed(const TensorRef& dx, const TensorRef& dy, const TensorRef& y, int dim,
                            bool log) {
  const auto plan = make_line_plan<3>({&dx, &dy, &y}, dim, "cpu softmax_backward");
  const std::int64_t n = plan.length, sdx = plan.strides[0], sdy = plan.strides[1],
                     sy = plan.strides[2];
  for_each_line<3>(
      plan, {&dx, &dy, &y}, [&](const std::array<char*, 3>& pointers, std::int64_t width) {
        T* grad_in = reinterpret_cast<T*>(pointers[0]);
        const T* grad_out = reinterpret_cast<const T*>(pointers[1]);
        const T* out = reinterpret_cast<const T*>(pointers[2]);
        if (width == 1 && sdx == 1 && sdy == 1 && sy == 1)
          softmax_backward_line<true>(grad_in, grad_out, out, n, sdx, sdy, sy, log);
        else if (width == 1)
          softmax_backward_line<false>(grad_in, grad_out, out, n, sdx, sdy, sy, log);
        else
          softmax_backward_columns(grad_in, grad_out, out, n, sdx, sdy, sy, width, log);
      });
}

}  // namespace

void CpuBackend::softmax(const TensorRef& out, const TensorRef& in, int dim, bool log) {
  NG_CHECK(out.dtype == in.dtype, "cpu softmax", "out is ", out.dtype, " but in is ", in.dtype);
  if (any_bfloat16({&out, &in})) {
    Float32Copies f(*this);
    softmax(f.output(out), f.input(in), dim, log);
    return f.finish();
  }
  dispatch_floating(in.dtype, "cpu softmax", [&](auto tag) {
    softmax_forward<typename decltype(tag)::type>(out, in, dim, log);
  });
}

void CpuBackend::softmax_backward(const TensorRef& dx, const TensorRef& dy, const TensorRef& y,
                                  int dim, bool log) {
  NG_CHECK(dx.dtype == dy.dtype && dx.dtype == y.dtype, "cpu softmax_backward",
           "dtypes differ: dx ", dx.dtype, ", dy ", dy.dtype, ", y ", y.dtype);
  if (any_bfloat16({&dx, &dy, &y})) {
    Float32Copies f(*this);
    softmax_backward(f.output(dx), f.input(dy), f.input(y), dim, log);
    return f.finish();
  }
  dispatch_floating(dx.dtype, "cpu softmax_backward", [&](auto tag) {
    softmax_backward_typed<typename decltype(tag)::type>(dx, dy, y, dim, log);
  });
}

}  // namespace normgrad::backend::cpu
