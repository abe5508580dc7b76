// Elementwise unary ops, out = f(in), for every UnaryOp.
//
// The switch over the op runs once per call; each case instantiates the row kernel with its
// own lambda, so the inner loop is a plain (vectorisable where the math allows) loop over
// one function. int64 supports the ops that stay in the integers; the others throw.
// float32 exp, sigmoid and tanh are the exception: along unit-stride rows they run the
// vectorised row functions of vector_exp.h, which agree with the C library's to 1-2 ulp;
// strided and broadcast rows keep the scalar functions.

#include <cmath>
#include <type_traits>

#include "backends/bfloat16_widening.h"
#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/elementwise_math.h"
#include "backends/cpu/simd/vector_exp.h"
#include "backends/cpu/strided_loop.h"
#include "backends/dtype_dispatch.h"
#include "backends/op_names.h"

namespace normgrad::backend::cpu {

namespace {

// `cost`: an element's work in adds (strided_loop.h), for the functions of the C library that
// take several times as long as an add: one thread's nanoseconds an element over 511488 float32
// values were add 0.42, log 2.2, rsqrt 1.7, GELU 3.6, pow 4.7.
template <typename T, typename Function>
void run_unary(const TensorRef& out, const TensorRef& in, Function function,
               std::int64_t cost = 1) {
  for_each_element<2>(
      {&out, &in}, "cpu unary",
      [&](const std::array<char*, 2>& pointers, const std::int64_t* strides, std::int64_t count,
          std::int64_t) {
        unary_row<T, T>(pointers[0], pointers[1], strides[0], strides[1], count, function);
      },
      /*keep_order=*/false, cost);
}

using FloatRowFunction = void (*)(float*, const float*, std::int64_t, VectorPath);

// float32: unit-stride rows through `row`, the others element by element through `scalar`.
template <typename Scalar>
void run_unary_float_rows(const TensorRef& out, const TensorRef& in, FloatRowFunction row,
                          Scalar scalar) {
  const VectorPath path = default_vector_path();
  for_each_element<2>({&out, &in}, "cpu unary",
                      [&](const std::array<char*, 2>& pointers, const std::int64_t* strides,
                          std::int64_t count, std::int64_t) {
                        if (strides[0] == 1 && strides[1] == 1)
                          row(reinterpret_cast<float*>(pointers[0]),
                              reinterpret_cast<const float*>(pointers[1]), count, path);
                        else
                          unary_row<float, float>(pointers[0], pointers[1], strides[0], strides[1],
                                                  count, scalar);
                      });
}

// Ops defined for every dtype.
template <typename T>
bool unary_any_dtype(UnaryOp op, const TensorRef& out, const TensorRef& in, T alpha, T beta) {
  switch (op) {
    case UnaryOp::Neg:
      run_unary<T>(out, in, [](T x) { return negate_value(x); });
      return true;
    case UnaryOp::Abs:
      run_unary<T>(out, in, [](T x) { return absolute_value(x); });
      return true;
    case UnaryOp::Sign:
      run_unary<T>(out, in, [](T x) {
        return x != x ? x : static_cast<T>((T{0} < x) - (x < T{0}));  // NaN stays NaN
      });
      return true;
    case UnaryOp::Square:
      run_unary<T>(out, in, [](T x) { return multiply_values(x, x); });
      return true;
    case UnaryOp::Relu:
      run_unary<T>(out, in, [](T x) { return x < T{0} ? T{0} : x; });
      return true;
    case UnaryOp::Clamp:
      run_unary<T>(out, in,
                   [alpha, beta](T x) { return x < alpha ? alpha : (x > beta ? beta : x); });
      return true;
    case UnaryOp::AddScalar:
      run_unary<T>(out, in, [alpha](T x) { return add_values(x, alpha); });
      return true;
    case UnaryOp::MulScalar:
      run_unary<T>(out, in, [alpha](T x) { return multiply_values(x, alpha); });
      return true;
    case UnaryOp::RsubScalar:
      run_unary<T>(out, in, [alpha](T x) { return subtract_values(alpha, x); });
      return true;
    default:
      return false;
  }
}

// Ops that need a floating-point type.
template <typename T>
void unary_floating(UnaryOp op, const TensorRef& out, const TensorRef& in, T alpha) {
  switch (op) {
    case UnaryOp::Exp:
      if constexpr (std::is_same_v<T, float>)
        return run_unary_float_rows(out, in, exp_row, [](float x) { return std::exp(x); });
      return run_unary<T>(out, in, [](T x) { return std::exp(x); });
    case UnaryOp::Log:
      return run_unary<T>(
          out, in, [](T x) { return std::log(x); }, 5);
    case UnaryOp::Sqrt:
      return run_unary<T>(out, in, [](T x) { return std::sqrt(x); });
    case UnaryOp::Rsqrt:
      return run_unary<T>(
          out, in, [](T x) { return T{1} / std::sqrt(x); }, 4);
    case UnaryOp::Tanh:
      if constexpr (std::is_same_v<T, float>)
        return run_unary_float_rows(out, in, tanh_row, [](float x) { return std::tanh(x); });
      return run_unary<T>(out, in, [](T x) { return std::tanh(x); });
    case UnaryOp::Sigmoid:
      if constexpr (std::is_same_v<T, float>)
        return run_unary_float_rows(out, in, sigmoid_row, sigmoid_value<float>);
      return run_unary<T>(out, in, [](T x) { return sigmoid_value(x); });
    case UnaryOp::Gelu:
      return run_unary<T>(
          out, in, [](T x) { return gelu_value(x); }, 8);
    case UnaryOp::LeakyRelu:
      return run_unary<T>(out, in, [alpha](T x) { return x * leaky_relu_slope(x, alpha); });
    case UnaryOp::PowScalar:
      if (alpha == T{2}) return run_unary<T>(out, in, [](T x) { return x * x; });
      return run_unary<T>(
          out, in, [alpha](T x) { return std::pow(x, alpha); }, 11);
    case UnaryOp::RdivScalar:
      return run_unary<T>(out, in, [alpha](T x) { return alpha / x; });
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
  if (any_bfloat16({&out, &in})) {
    Float32Copies f(*this);
    unary(op, f.output(out), f.input(in), alpha, beta);
    return f.finish();
  }
  dispatch_any(out.dtype, "cpu unary", [&](auto tag) {
    using T = typename decltype(tag)::type;
    if (unary_any_dtype<T>(op, out, in, static_cast<T>(alpha), static_cast<T>(beta))) return;
    if constexpr (std::is_floating_point_v<T>) {
      unary_floating<T>(op, out, in, static_cast<T>(alpha));
    } else {
      throw Error(detail::concat("cpu unary: ", unary_name(op), " is not supported for ", out.dtype,
                                 "; convert to a float dtype"));
    }
  });
}

}  // namespace normgrad::backend::cpu
