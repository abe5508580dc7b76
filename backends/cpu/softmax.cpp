// Softmax and log-softmax along one dim, forward and backward, fused.
//
// Forward, per line x along the dim (m = max x, the shift that keeps exp from overflowing):
//   softmax:     y = exp(x - m) / sum exp(x - m)         (exp stored, then scaled: 3 passes)
//   log_softmax: y = (x - m) - log(sum exp(x - m))
// Backward, from dy and the forward output y:
//   softmax:     dx = y * (dy - sum(dy * y))
//   log_softmax: dx = dy - exp(y) * sum(dy)
// Sums accumulate in double. The other dims are iterated like any strided layout; when they
// include a unit-stride dim and the softmax dim does not (softmax over dim 0 of a row-major
// matrix), up to 256 adjacent lines are processed together, with the inner loop over the
// unit-stride columns.

#include <cmath>
#include <limits>

#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/dtype_dispatch.h"
#include "backends/cpu/elementwise_math.h"
#include "backends/cpu/strided_loop.h"

namespace normgrad::backend::cpu {

namespace {

constexpr std::int64_t column_block = 256;

// Lines along `dim` of N same-shaped tensors (operand 0 written), with their dim strides.
template <int N> struct LinePlan {
  StridedLayout<N> rest;  // every dim except `dim`
  std::int64_t length = 0;
  std::int64_t strides[N] = {};
};

template <int N>
LinePlan<N> make_line_plan(const std::array<const TensorRef*, N>& tensors, int dim, const char* op) {
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

// Calls line(pointers, width, column_stride) for blocks of `width` lines: width = 1 in the
// row form; in the column form, `width` adjacent lines whose elements sit at unit stride.
template <int N, typename Line>
void for_each_line(const LinePlan<N>& plan, const std::array<const TensorRef*, N>& tensors, Line line) {
  if (plan.rest.numel == 0 || plan.length == 0) return;
  std::array<char*, N> base;
  std::array<std::int64_t, N> element_sizes;
  for (int k = 0; k < N; ++k) {
    base[k] = static_cast<char*>(tensors[k]->data);
    element_sizes[k] = static_cast<std::int64_t>(element_size(tensors[k]->dtype));
  }
  bool columns = plan.rest.rank > 0;
  for (int k = 0; k < N; ++k) columns = columns && plan.rest.inner_strides[k] == 1 && plan.strides[k] != 1;
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
  const std::int64_t blocks = (columns_per_line + column_block - 1) / column_block;
  const std::int64_t tasks = plan.rest.numel / columns_per_line * blocks;
  parallel_for(tasks, plan.length * std::min(columns_per_line, column_block),
               [&](std::int64_t begin, std::int64_t end) {
                 for (std::int64_t task = begin; task < end; ++task) {
                   const std::int64_t first_column = task % blocks * column_block;
                   const auto offsets = offsets_of(plan.rest, task / blocks * columns_per_line);
                   std::array<char*, N> pointers;
                   for (int k = 0; k < N; ++k)
                     pointers[k] = base[k] + offsets[k] + first_column * element_sizes[k];
                   line(pointers, std::min(column_block, columns_per_line - first_column));
                 }
               });
}

template <typename T>
void softmax_forward(const TensorRef& out, const TensorRef& in, int dim, bool log) {
  const auto plan = make_line_plan<2>({&out, &in}, dim, "cpu softmax");
  const std::int64_t n = plan.length, so = plan.strides[0], sx = plan.strides[1];
  for_each_line<2>(plan, {&out, &in}, [&](const std::array<char*, 2>& pointers, std::int64_t width) {
    T* y = reinterpret_cast<T*>(pointers[0]);
    const T* x = reinterpret_cast<const T*>(pointers[1]);
    T max_value[column_block];
    double sum[column_block];
    for (std::int64_t j = 0; j < width; ++j) {
      max_value[j] = x[j];
      sum[j] = 0.0;
    }
    for (std::int64_t k = 1; k < n; ++k)
      for (std::int64_t j = 0; j < width; ++j) max_value[j] = maximum_value(max_value[j], x[k * sx + j]);
    for (std::int64_t k = 0; k < n; ++k)
      for (std::int64_t j = 0; j < width; ++j) {
        const T e = std::exp(x[k * sx + j] - max_value[j]);
        sum[j] += e;
        if (!log) y[k * so + j] = e;
      }
    if (!log) {
      for (std::int64_t j = 0; j < width; ++j) sum[j] = 1.0 / sum[j];
      for (std::int64_t k = 0; k < n; ++k)
        for (std::int64_t j = 0; j < width; ++j) y[k * so + j] = static_cast<T>(y[k * so + j] * sum[j]);
    } else {
      T log_sum[column_block];
      for (std::int64_t j = 0; j < width; ++j) log_sum[j] = static_cast<T>(std::log(sum[j]));
      for (std::int64_t k = 0; k < n; ++k)
        for (std::int64_t j = 0; j < width; ++j) y[k * so + j] = (x[k * sx + j] - max_value[j]) - log_sum[j];
    }
  });
}

template <typename T>
void softmax_backward_typed(const TensorRef& dx, const TensorRef& dy, const TensorRef& y, int dim, bool log) {
  const auto plan = make_line_plan<3>({&dx, &dy, &y}, dim, "cpu softmax_backward");
  const std::int64_t n = plan.length, sdx = plan.strides[0], sdy = plan.strides[1], sy = plan.strides[2];
  for_each_line<3>(plan, {&dx, &dy, &y}, [&](const std::array<char*, 3>& pointers, std::int64_t width) {
    T* grad_in = reinterpret_cast<T*>(pointers[0]);
    const T* grad_out = reinterpret_cast<const T*>(pointers[1]);
    const T* out = reinterpret_cast<const T*>(pointers[2]);
    double sum[column_block];
    for (std::int64_t j = 0; j < width; ++j) sum[j] = 0.0;
    for (std::int64_t k = 0; k < n; ++k)
      for (std::int64_t j = 0; j < width; ++j)
        sum[j] += log ? grad_out[k * sdy + j] : grad_out[k * sdy + j] * out[k * sy + j];
    T typed_sum[column_block];
    for (std::int64_t j = 0; j < width; ++j) typed_sum[j] = static_cast<T>(sum[j]);
    for (std::int64_t k = 0; k < n; ++k)
      for (std::int64_t j = 0; j < width; ++j) {
        const T g = grad_out[k * sdy + j], value = out[k * sy + j];
        grad_in[k * sdx + j] = log ? g - std::exp(value) * typed_sum[j] : value * (g - typed_sum[j]);
      }
  });
}

}  // namespace

void CpuBackend::softmax(const TensorRef& out, const TensorRef& in, int dim, bool log) {
  NG_CHECK(out.dtype == in.dtype, "cpu softmax", "out is ", out.dtype, " but in is ", in.dtype);
  dispatch_floating(in.dtype, "cpu softmax", [&](auto tag) {
    softmax_forward<typename decltype(tag)::type>(out, in, dim, log);
  });
}

void CpuBackend::softmax_backward(const TensorRef& dx, const TensorRef& dy, const TensorRef& y, int dim,
                                  bool log) {
  NG_CHECK(dx.dtype == dy.dtype && dx.dtype == y.dtype, "cpu softmax_backward", "dtypes differ: dx ",
           dx.dtype, ", dy ", dy.dtype, ", y ", y.dtype);
  dispatch_floating(dx.dtype, "cpu softmax_backward", [&](auto tag) {
    softmax_backward_typed<typename decltype(tag)::type>(dx, dy, y, dim, log);
  });
}

}  // namespace normgrad::backend::cpu
