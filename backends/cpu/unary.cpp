// Elementwise unary ops, out = f(in), for every UnaryOp.
//
// The switch over the op runs once per call; each case instantiates the row kernel with its
// own lambda, so the inner loop is a plain (vectorisable where the math allows) loop over
// one function. int64 supports the ops that stay in the integers; the others throw.
// float32 exp, sigmoid and tanh are the exception: along unit-stride rows they run the
// vectorised row functions of vector_exp.h, which agree with the C library's to 1-2 ulp;
// strided and broadcast rows keep the scalar functions. bfloat16 computes in float32, each
// value widened as it is loaded and rounded once as it is stored (bfloat16_rows.h).

#include <algorithm>
#include <cmath>
#include <type_traits>

#include "backends/cpu/bfloat16_rows.h"
#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/elementwise_math.h"
#include "backends/cpu/row_kernel.h"
#include "backends/cpu/strided_loop.h"
#include "backends/cpu/simd/vector_exp.h"
#include "backends/dtype_dispatch.h"
#include "backends/op_names.h"

namespace normgrad::backend::cpu {

namespace {

// A bfloat16 row, compiled for AVX2 as well (row_kernel.h): baseline x86-64 has no instruction
// that packs rounded 32-bit lanes into 16-bit ones, so there the loop stays scalar.
template <typename Function>
NORMGRAD_ROW_KERNEL void bfloat16_unary_row(char* out, const char* in, std::int64_t out_stride,
                                            std::int64_t in_stride, std::int64_t count,
                                            Function function) {
  unary_row<bfloat16, bfloat16>(out, in, out_stride, in_stride, count, function);
}

// out = function(in) over S values; the function computes in compute_t<S> (bfloat16_rows.h).
template <typename S, typename Function>
void run_unary(const TensorRef& out, const TensorRef& in, Function function) {
  const auto stored = on_stored<S>(function);
  for_each_element<2>(
      {&out, &in}, "cpu unary",
      [&](const std::array<char*, 2>& pointers, const std::int64_t* strides, std::int64_t count,
          std::int64_t) {
        if constexpr (widens<S>)
          bfloat16_unary_row(pointers[0], pointers[1], strides[0], strides[1], count, stored);
        else
          unary_row<S, S>(pointers[0], pointers[1], strides[0], strides[1], count, stored);
      });
}

using FloatRowFunction = void (*)(float*, const float*, std::int64_t, VectorPath);

// Values a bfloat16 row is widened by at a time for a float32 row function: a multiple of its
// vector width, so that each value takes the same path as in a float32 row.
constexpr std::int64_t widened_chunk = 256;

// float32 (or bfloat16): unit-stride rows through `row`, the others element by element through
// `scalar`. bfloat16 rows go through `row` in chunks widened on the stack.
template <typename S, typename Scalar>
void run_unary_float_rows(const TensorRef& out, const TensorRef& in, FloatRowFunction row,
                          Scalar scalar) {
  const VectorPath path = default_vector_path();
  const auto stored_scalar = on_stored<S>(scalar);
  for_each_element<2>({&out, &in}, "cpu unary",
                      [&](const std::array<char*, 2>& pointers, const std::int64_t* strides,
                          std::int64_t count, std::int64_t) {
                        if (strides[0] != 1 || strides[1] != 1)
                          return unary_row<S, S>(pointers[0], pointers[1], strides[0], strides[1],
                                                 count, stored_scalar);
                        S* out_row = reinterpret_cast<S*>(pointers[0]);
                        const S* in_row = reinterpret_cast<const S*>(pointers[1]);
                        if constexpr (widens<S>) {
                          float in_chunk[widened_chunk], out_chunk[widened_chunk];
                          for (std::int64_t first = 0; first < count; first += widened_chunk) {
                            const std::int64_t length = std::min(widened_chunk, count - first);
                            row(out_chunk, row_values(in_row + first, length, in_chunk), length,
                                path);
                            store_row(out_row + first, out_chunk, length);
                          }
                        } else {
                          row(out_row, in_row, count, path);
                        }
                      });
}

// Ops defined for every dtype, computed in T.
template <typename S, typename T = compute_t<S>>
bool unary_any_dtype(UnaryOp op, const TensorRef& out, const TensorRef& in, T alpha, T beta) {
  switch (op) {
    case UnaryOp::Neg:
      run_unary<S>(out, in, [](T x) { return negate_value(x); });
      return true;
    case UnaryOp::Abs:
      run_unary<S>(out, in, [](T x) { return absolute_value(x); });
      return true;
    case UnaryOp::Sign:
      run_unary<S>(out, in, [](T x) {
        return x != x ? x : static_cast<T>((T{0} < x) - (x < T{0}));  // NaN stays NaN
      });
      return true;
    case UnaryOp::Square:
      run_unary<S>(out, in, [](T x) { return multiply_values(x, x); });
      return true;
    case UnaryOp::Relu:
      run_unary<S>(out, in, [](T x) { return x < T{0} ? T{0} : x; });
      return true;
    case UnaryOp::Clamp:
      run_unary<S>(out, in,
                   [alpha, beta](T x) { return x < alpha ? alpha : (x > beta ? beta : x); });
      return true;
    case UnaryOp::AddScalar:
      run_unary<S>(out, in, [alpha](T x) { return add_values(x, alpha); });
      return true;
    case UnaryOp::MulScalar:
      run_unary<S>(out, in, [alpha](T x) { return multiply_values(x, alpha); });
      return true;
    case UnaryOp::RsubScalar:
      run_unary<S>(out, in, [alpha](T x) { return subtract_values(alpha, x); });
      return true;
    default:
      return false;
  }
}

// Ops that need a floating-point type, computed in T.
template <typename S, typename T = compute_t<S>>
void unary_floating(UnaryOp op, const TensorRef& out, const TensorRef& in, T alpha) {
  switch (op) {
    case UnaryOp::Exp:
      if constexpr (std::is_same_v<T, float>)
        return run_unary_float_rows<S>(out, in, exp_row, [](float x) { return std::exp(x); });
      return run_unary<S>(out, in, [](T x) { return std::exp(x); });
    case UnaryOp::Log:
      return run_unary<S>(out, in, [](T x) { return std::log(x); });
    case UnaryOp::Sqrt:
      return run_unary<S>(out, in, [](T x) { return std::sqrt(x); });
    case UnaryOp::Rsqrt:
      return run_unary<S>(out, in, [](T x) { return T{1} / std::sqrt(x); });
    case UnaryOp::Tanh:
      if constexpr (std::is_same_v<T, float>)
        return run_unary_float_rows<S>(out, in, tanh_row, [](float x) { return std::tanh(x); });
      return run_unary<S>(out, in, [](T x) { return std::tanh(x); });
    case UnaryOp::Sigmoid:
      if constexpr (std::is_same_v<T, float>)
        return run_unary_float_rows<S>(out, in, sigmoid_row, sigmoid_value<float>);
      return run_unary<S>(out, in, [](T x) { return sigmoid_value(x); });
    case UnaryOp::Gelu:
      return run_unary<S>(out, in, [](T x) { return gelu_value(x); });
    case UnaryOp::LeakyRelu:
      return run_unary<S>(out, in, [alpha](T x) { return x * leaky_relu_slope(x, alpha); });
    case UnaryOp::PowScalar:
      if (alpha == T{2}) return run_unary<S>(out, in, [](T x) { return x * x; });
      return run_unary<S>(out, in, [alpha](T x) { return std::pow(x, alpha); });
    case UnaryOp::RdivScalar:
      return run_unary<S>(out, in, [alpha](T x) { return alpha / x; });
    default:
      break;
  }
  throw Error(detail::concat("cpu unary: unknown op ", static_cast<int>(op)));
}

}  // namespace

void CpuBackend::unary(UnaryOp op, const TensorRef& out, const TensorRef& in, double alpha,
                       double beta) {
  NG_CHECK(out.dtype == in.dtype, "cpu unary", unary_name(op), ": out is ", out.dtype,
           " but in is ", in.dtype);
  dispatch_storage(out.dtype, "cpu unary", [&](auto tag) {
    using S = typename decltype(tag)::type;
    using T = compute_t<S>;
    if (unary_any_dtype<S>(op, out, in, static_cast<T>(alpha), static_cast<T>(beta))) return;
    if constexpr (std::is_floating_point_v<T>) {
      unary_floating<S>(op, out, in, static_cast<T>(alpha));
    } else {
      throw Error(detail::concat("cpu unary: ", unary_name(op), " is not supported for ", out.dtype,
                                 "; convert to a float dtype"));
    }
  });
}

}  // namespace normgrad::backend::cpu
