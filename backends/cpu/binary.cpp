// Elementwise binary ops, out = f(a, b), and where(cond, a, b).
//
// a and b arrive broadcast to out's shape (stride 0 along broadcast dims); after the layout
// merges, a bias added along rows or columns hits the row kernel's "one operand is a scalar"
// path. Arithmetic requires one dtype for all three tensors; comparisons may write 1/0 into
// an output of another dtype.

#include <cmath>

#include "backends/bfloat16_widening.h"
#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/elementwise_math.h"
#include "backends/cpu/strided_loop.h"
#include "backends/dtype_dispatch.h"
#include "backends/op_names.h"

namespace normgrad::backend::cpu {

namespace {

bool is_comparison(BinaryOp op) {
  return op == BinaryOp::Eq || op == BinaryOp::Ne || op == BinaryOp::Lt || op == BinaryOp::Le ||
         op == BinaryOp::Gt || op == BinaryOp::Ge;
}

template <typename Out, typename In, typename Function>
void run_binary(const TensorRef& out, const TensorRef& a, const TensorRef& b, Function function) {
  for_each_element<3>({&out, &a, &b}, "cpu binary",
                      [&](const std::array<char*, 3>& pointers, const std::int64_t* strides,
                          std::int64_t count, std::int64_t) {
                        binary_row<Out, In, In>(pointers[0], pointers[1], pointers[2], strides,
                                                count, function);
                      });
}

template <typename Out, typename In>
void comparison(BinaryOp op, const TensorRef& out, const TensorRef& a, const TensorRef& b) {
  const auto as_out = [](bool value) { return static_cast<Out>(value ? 1 : 0); };
  switch (op) {
    case BinaryOp::Eq:
      return run_binary<Out, In>(out, a, b, [=](In x, In y) { return as_out(x == y); });
    case BinaryOp::Ne:
      return run_binary<Out, In>(out, a, b, [=](In x, In y) { return as_out(x != y); });
    case BinaryOp::Lt:
      return run_binary<Out, In>(out, a, b, [=](In x, In y) { return as_out(x < y); });
    case BinaryOp::Le:
      return run_binary<Out, In>(out, a, b, [=](In x, In y) { return as_out(x <= y); });
    case BinaryOp::Gt:
      return run_binary<Out, In>(out, a, b, [=](In x, In y) { return as_out(x > y); });
    case BinaryOp::Ge:
      return run_binary<Out, In>(out, a, b, [=](In x, In y) { return as_out(x >= y); });
    default:
      break;
  }
}

// Ops defined for every dtype.
template <typename T>
bool binary_any_dtype(BinaryOp op, const TensorRef& out, const TensorRef& a, const TensorRef& b) {
  switch (op) {
    case BinaryOp::Add:
      run_binary<T, T>(out, a, b, [](T x, T y) { return add_values(x, y); });
      return true;
    case BinaryOp::Sub:
      run_binary<T, T>(out, a, b, [](T x, T y) { return subtract_values(x, y); });
      return true;
    case BinaryOp::Mul:
      run_binary<T, T>(out, a, b, [](T x, T y) { return multiply_values(x, y); });
      return true;
    case BinaryOp::Maximum:
      run_binary<T, T>(out, a, b, [](T x, T y) { return maximum_value(x, y); });
      return true;
    case BinaryOp::Minimum:
      run_binary<T, T>(out, a, b, [](T x, T y) { return minimum_value(x, y); });
      return true;
    default:
      return false;
  }
}

// Ops that need a floating-point type.
template <typename T>
void binary_floating(BinaryOp op, const TensorRef& out, const TensorRef& a, const TensorRef& b,
                     T alpha) {
  switch (op) {
    case BinaryOp::Div:
      return run_binary<T, T>(out, a, b, [](T x, T y) { return x / y; });
    case BinaryOp::Pow:
      return run_binary<T, T>(out, a, b, [](T x, T y) { return std::pow(x, y); });
    // dy * (1 - y^2)
    case BinaryOp::TanhGrad:
      return run_binary<T, T>(out, a, b, [](T dy, T y) { return dy * (T{1} - y * y); });
    // dy * y * (1 - y)
    case BinaryOp::SigmoidGrad:
      return run_binary<T, T>(out, a, b, [](T dy, T y) { return dy * y * (T{1} - y); });
    case BinaryOp::ReluGrad:
      return run_binary<T, T>(out, a, b, [](T dy, T x) { return x > T{0} ? dy : T{0}; });
    case BinaryOp::GeluGrad:
      return run_binary<T, T>(out, a, b, [](T dy, T x) { return dy * gelu_derivative(x); });
    case BinaryOp::LeakyReluGrad:
      return run_binary<T, T>(out, a, b,
                              [alpha](T dy, T x) { return dy * leaky_relu_slope(x, alpha); });
    default:
      break;
  }
  throw Error(detail::concat("cpu binary: unknown op ", static_cast<int>(op)));
}

}  // namespace

void CpuBackend::binary(BinaryOp op, const TensorRef& out, const TensorRef& a, const TensorRef& b,
                        double alpha) {
  NG_CHECK(a.dtype == b.dtype, "cpu binary", binary_name(op), ": a is ", a.dtype, " but b is ",
           b.dtype);
  NG_CHECK(is_comparison(op) || out.dtype == a.dtype, "cpu binary", binary_name(op), ": out is ",
           out.dtype, " but the operands are ", a.dtype);
  if (any_bfloat16({&out, &a, &b})) {
    Float32Copies f(*this);
    binary(op, f.output(out), f.input(a), f.input(b), alpha);
    return f.finish();
  }
  if (is_comparison(op)) {
    dispatch_any(out.dtype, "cpu binary", [&](auto out_tag) {
      dispatch_any(a.dtype, "cpu binary", [&](auto in_tag) {
        comparison<typename decltype(out_tag)::type, typename decltype(in_tag)::type>(op, out, a,
                                                                                      b);
      });
    });
    return;
  }
  dispatch_any(out.dtype, "cpu binary", [&](auto tag) {
    using T = typename decltype(tag)::type;
    if (binary_any_dtype<T>(op, out, a, b)) return;
    if constexpr (std::is_floating_point_v<T>) {
      binary_floating<T>(op, out, a, b, static_cast<T>(alpha));
    } else if (op == BinaryOp::Div) {
      throw Error("cpu binary: int64 division is not supported; convert to a float dtype");
    } else {
      throw Error(detail::concat("cpu binary: ", binary_name(op), " is not supported for ",
                                 out.dtype, "; convert to a float dtype"));
    }
  });
}

// out = cond != 0 ? a : b. cond may have any dtype; a, b and out share one.
void CpuBackend::where(const TensorRef& out, const TensorRef& cond, const TensorRef& a,
                       const TensorRef& b) {
  NG_CHECK(out.dtype == a.dtype && out.dtype == b.dtype, "cpu where",
           "out, a and b must share a dtype, got ", out.dtype, ", ", a.dtype, " and ", b.dtype);
  // Values are moved, never computed on: bfloat16 ones as they are. A bfloat16 condition
  // compares as float32 (-0 counts as 0).
  dispatch_storage(out.dtype, "cpu where", [&](auto value_tag) {
    dispatch_storage(cond.dtype, "cpu where", [&](auto cond_tag) {
      using T = typename decltype(value_tag)::type;
      using C = typename decltype(cond_tag)::type;
      for_each_element<4>(
          {&out, &cond, &a, &b}, "cpu where",
          [](const std::array<char*, 4>& pointers, const std::int64_t* strides, std::int64_t count,
             std::int64_t) {
            T* o = reinterpret_cast<T*>(pointers[0]);
            const C* c = reinterpret_cast<const C*>(pointers[1]);
            const T* x = reinterpret_cast<const T*>(pointers[2]);
            const T* y = reinterpret_cast<const T*>(pointers[3]);
            if (strides[0] == 1 && strides[1] == 1 && strides[2] == 1 && strides[3] == 1) {
#pragma omp simd
              for (std::int64_t i = 0; i < count; ++i) o[i] = c[i] != C{0} ? x[i] : y[i];
            } else {
              for (std::int64_t i = 0; i < count; ++i)
                o[i * strides[0]] =
                    c[i * strides[1]] != C{0} ? x[i * strides[2]] : y[i * strides[3]];
            }
          });
    });
  });
}

}  // namespace normgrad::backend::cpu
