// The elementwise family (unary ops, binary ops, ops with a scalar, comparisons, where and
// masked_fill) on each floor, each section below:
//   - the ops (autograd/functions/unary.cpp, binary.cpp, scalar.cpp, compare.cpp): values
//     against the C++ standard library and against NumPy's broadcasting (the fixture
//     fixtures/broadcast_reduce.json), int64 arithmetic, errors, and float64 gradient checks of
//     every op, broadcast operands included;
//   - the CPU kernels (backends/cpu/unary.cpp, binary.cpp), called directly through TensorRefs
//     over std::vector buffers, against hand-computed values, the standard library or a naive
//     loop on contiguous, transposed, broadcast (stride 0), sliced, rank-0 and empty layouts;
//     the vectorised float32 exp, sigmoid and tanh (backends/cpu/simd/vector_exp.h) against
//     double to their ulp bounds, on every path, and the softmax row steps built on them;
//   - on a GPU, the CUDA kernels (backends/cuda/elementwise.cu) against the CPU's, values and
//     gradients;
//   - bfloat16: each backend's kernels are, bit for bit, the float32 kernels on the same values,
//     rounded once.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "backends/cpu/simd/vector_exp.h"
#include "backends/dispatch.h"
#include "backends/op_names.h"
#include "backends/philox.h"
#include "base/error.h"
#include "bfloat16_twins.h"
#include "broadcast_reduce_fixture.h"
#include "core/tensor_internal.h"
#include "cpu_kernel_buffers.h"
#include "cuda_parity.h"
#include "helpers.h"

using namespace normgrad;
using testing::all_close;
using testing::leaf;
using testing::positive_leaf;
using Inputs = std::vector<Tensor>;

namespace {
std::vector<double> map_values(const std::vector<double>& xs, double (*f)(double)) {
  std::vector<double> out;
  for (double x : xs) out.push_back(f(x));
  return out;
}
}  // namespace

TEST_CASE("unary ops agree with the standard library") {
  const std::vector<double> xs{-2.5, -1, -0.25, 0, 0.5, 1, 3};
  const std::vector<double> positive{0.25, 0.5, 1, 2, 9};
  for (DType dtype : {DType::Float32, DType::Float64}) {
    const double rtol = dtype == DType::Float32 ? 1e-6 : 1e-14;
    const Tensor x = from_vector(xs, {7}).to(dtype);
    const Tensor p = from_vector(positive, {5}).to(dtype);
    CHECK(all_close(exp(x), map_values(xs, [](double v) { return std::exp(v); }), rtol));
    CHECK(all_close(tanh(x), map_values(xs, [](double v) { return std::tanh(v); }), rtol));
    CHECK(all_close(sigmoid(x), map_values(xs, [](double v) { return 1 / (1 + std::exp(-v)); }),
                    rtol));
    CHECK(all_close(relu(x), map_values(xs, [](double v) { return v > 0 ? v : 0.0; }), rtol));
    CHECK(all_close(abs(x), map_values(xs, [](double v) { return std::fabs(v); }), rtol));
    CHECK(all_close(neg(x), map_values(xs, [](double v) { return -v; }), rtol));
    CHECK(all_close(square(x), map_values(xs, [](double v) { return v * v; }), rtol));
    CHECK(all_close(sign(x), map_values(xs, [](double v) { return double((v > 0) - (v < 0)); }),
                    rtol));
    CHECK(all_close(
        gelu(x),
        map_values(xs, [](double v) { return 0.5 * v * (1 + std::erf(v / std::sqrt(2.0))); }), rtol,
        1e-7));
    CHECK(all_close(leaky_relu(x, 0.1),
                    map_values(xs, [](double v) { return v > 0 ? v : 0.1 * v; }), rtol));
    CHECK(all_close(clamp(x, -1, 0.5),
                    map_values(xs, [](double v) { return std::min(std::max(v, -1.0), 0.5); }),
                    rtol));
    CHECK(all_close(log(p), map_values(positive, [](double v) { return std::log(v); }), rtol));
    CHECK(all_close(sqrt(p), map_values(positive, [](double v) { return std::sqrt(v); }), rtol));
    CHECK(
        all_close(rsqrt(p), map_values(positive, [](double v) { return 1 / std::sqrt(v); }), rtol));
    CHECK(all_close(pow(p, 1.5), map_values(positive, [](double v) { return std::pow(v, 1.5); }),
                    rtol));
    CHECK(all_close(2.0 / p, map_values(positive, [](double v) { return 2 / v; }), rtol));
    CHECK(all_close(1.0 - p, map_values(positive, [](double v) { return 1 - v; }), rtol));
    CHECK(all_close(p / 4.0, map_values(positive, [](double v) { return v / 4; }), rtol));
    CHECK(all_close(p * 3.0 + 1.0, map_values(positive, [](double v) { return 3 * v + 1; }), rtol));
  }
}

TEST_CASE("gelu keeps its far negative tail, forward and backward") {
  // x Phi(x) and Phi(x) + x phi(x), computed with mpmath at 40 digits.
  const std::vector<double> xs = {-5, -10, -20, -30, -37};
  const std::vector<double> values = {-1.4332578593959696e-6, -7.6198530241605261e-23,
                                      -5.5072482372124674e-88, -1.4720141781444561e-196,
                                      -2.1184613523340934e-298};
  const std::vector<double> slopes = {-7.1469460017922946e-6, -7.6184000964648141e-22,
                                      -1.1014360483133464e-86, -4.4160316907084944e-195,
                                      -7.8382986694185162e-297};
  const Tensor x = from_vector(xs, {5}).requires_grad_();
  const Tensor y = gelu(x);
  CHECK(all_close(y, values, 1e-13, 0));
  y.sum().backward();
  CHECK(all_close(x.grad(), slopes, 1e-13, 0));
  // float32 holds the first two.
  const Tensor x32 = from_vector(std::vector<float>{-5, -10}, {2}).requires_grad_();
  const Tensor y32 = gelu(x32);
  CHECK(all_close(y32, {values[0], values[1]}, 1e-5, 0));
  y32.sum().backward();
  CHECK(all_close(x32.grad(), {slopes[0], slopes[1]}, 1e-5, 0));
}

TEST_CASE("clamp's gradient is 1 on the closed interval, bounds included, and 0 at NaN") {
  const Tensor x =
      tensor({-2.0, -1.0, 0.0, 0.5, 1.0, std::nan("")}, {.dtype = DType::Float64}).requires_grad_();
  clamp(x, -1.0, 0.5).sum().backward();
  CHECK(all_close(x.grad(), {0, 1, 1, 1, 0, 0}, 0, 0));
}

TEST_CASE("exp and log follow IEEE arithmetic at the edges") {
  CHECK(std::isinf(exp(tensor({100.0f})).item()));
  CHECK(std::isinf(log(tensor({0.0f})).item()));
  CHECK(std::isnan(log(tensor({-1.0f})).item()));
}

TEST_CASE("comparisons give 1/0 masks, and where and masked_fill select") {
  const Tensor a = tensor({1, 2, 3, 4});
  const Tensor b = tensor({4, 2, 2, 4});
  CHECK(eq(a, b).to_vector<float>() == std::vector<float>{0, 1, 0, 1});
  CHECK(ne(a, b).to_vector<float>() == std::vector<float>{1, 0, 1, 0});
  CHECK(lt(a, b).to_vector<float>() == std::vector<float>{1, 0, 0, 0});
  CHECK(le(a, b).to_vector<float>() == std::vector<float>{1, 1, 0, 1});
  CHECK(gt(a, 2.0).to_vector<float>() == std::vector<float>{0, 0, 1, 1});
  CHECK(ge(a, 2.0).to_vector<float>() == std::vector<float>{0, 1, 1, 1});
  CHECK(where(gt(a, 2.0), a, b).to_vector<float>() == std::vector<float>{4, 2, 3, 4});
  const Tensor mask = tensor({{1, 0}, {0, 1}});
  CHECK(masked_fill(zeros({2, 2}), mask, -9).to_vector<float>() ==
        std::vector<float>{-9, 0, 0, -9});
  // An int64 condition selects between float tensors too.
  const Tensor condition = from_vector<std::int64_t>({0, 1}, {2});
  CHECK(where(condition, tensor({1, 2}), tensor({3, 4})).to_vector<float>() ==
        std::vector<float>{3, 2});
}

TEST_CASE("int64 tensors support integer arithmetic") {
  const Tensor a = from_vector<std::int64_t>({5, -3, 7}, {3});
  const Tensor b = from_vector<std::int64_t>({2, 2, -1}, {3});
  CHECK((a + b).to_vector<std::int64_t>() == std::vector<std::int64_t>{7, -1, 6});
  CHECK((a * b).to_vector<std::int64_t>() == std::vector<std::int64_t>{10, -6, -7});
  CHECK((a - b).dtype() == DType::Int64);
  CHECK(abs(a).to_vector<std::int64_t>() == std::vector<std::int64_t>{5, 3, 7});
  CHECK(a.sum().item<std::int64_t>() == 9);
  CHECK(maximum(a, b).to_vector<std::int64_t>() == std::vector<std::int64_t>{5, 2, 7});
}

TEST_CASE("elementwise ops refuse mismatched operands") {
  CHECK_ERROR(zeros({2, 3}) + zeros({4}), "add", "[2, 3]", "[4]", "cannot be broadcast");
  CHECK_ERROR(zeros({2}) * zeros({2}, {.dtype = DType::Float64}), "mul", "float32", "float64");
  CHECK_ERROR(exp(zeros({2}, {.dtype = DType::Int64})), "exp", "floating", "int64");
  CHECK_ERROR(clamp(zeros({2}), 1, 0), "clamp", "greater than");
  CHECK_ERROR(where(zeros({3}), zeros({2}), zeros({2})), "where", "[3]", "[2]");
  CHECK_ERROR(masked_fill(zeros({2}), zeros({3}), 0), "masked_fill", "[3]");
  CHECK_ERROR(Tensor() + zeros({1}), "add", "undefined");
}

TEST_CASE("float-only ops name themselves when given int64") {
  const Tensor k = zeros({2}, {.dtype = DType::Int64});
  CHECK_ERROR(log(k), "log", "int64");
  CHECK_ERROR(sqrt(k), "sqrt", "int64");
  CHECK_ERROR(rsqrt(k), "rsqrt", "int64");
  CHECK_ERROR(tanh(k), "tanh", "int64");
  CHECK_ERROR(sigmoid(k), "sigmoid", "int64");
  CHECK_ERROR(relu(k), "relu", "int64");
  CHECK_ERROR(leaky_relu(k), "leaky_relu", "int64");
  CHECK_ERROR(gelu(k), "gelu", "int64");
  CHECK_ERROR(pow(k, 2.0), "pow", "int64");
  CHECK_ERROR(2.0 / k, "rdiv", "int64");
  CHECK_ERROR(log_softmax(k, 0), "log_softmax", "int64");
  CHECK_ERROR(pow(zeros({2}), zeros({3})), "pow", "[2]", "[3]");
  CHECK_ERROR(minimum(zeros({2}), zeros({2}, {.dtype = DType::Float64})), "minimum", "float64");
}

using namespace testing::broadcast_reduce;

TEST_CASE("binary ops broadcast like NumPy") {
  const nlohmann::json fixture = load_fixture();
  for (DType dtype : {DType::Float32, DType::Float64}) {
    for (const auto& c : fixture["broadcast"]) {
      CAPTURE(c["a_shape"].dump());
      CAPTURE(c["b_shape"].dump());
      const Tensor a = from_json(c["a"], c["a_shape"], dtype);
      const Tensor b = from_json(c["b"], c["b_shape"], dtype);
      const Shape out_shape = c["out_shape"].get<Shape>();
      CHECK((a + b).shape() == out_shape);
      CHECK(all_close(a + b, c["add"].get<std::vector<double>>()));
      CHECK(all_close(a - b, c["sub"].get<std::vector<double>>()));
      CHECK(all_close(a * b, c["mul"].get<std::vector<double>>()));
      CHECK(all_close(a / b, c["div"].get<std::vector<double>>()));
      CHECK(all_close(maximum(a, b), c["maximum"].get<std::vector<double>>()));
      CHECK(all_close(lt(a, b), c["lt"].get<std::vector<double>>()));
      // The same through transposed (non-contiguous) operands.
      if (a.dim() >= 2) {
        const Tensor a_t = a.transpose(0, 1).contiguous().transpose(0, 1);
        CHECK(all_close(a_t * b, c["mul"].get<std::vector<double>>()));
      }
    }
  }
}

TEST_CASE("gradcheck: binary ops, including broadcast operands") {
  const Tensor a = leaf({2, 3}, 1), b = leaf({3}, 2), c = leaf({2, 1}, 3);
  const Tensor pa = positive_leaf({2, 3}, 4), pb = positive_leaf({3}, 5);
  CHECK_GRADIENTS([](const Inputs& x) { return x[0] + x[1]; }, {a, b});
  CHECK_GRADIENTS([](const Inputs& x) { return x[0] - x[1]; }, {a, c});
  CHECK_GRADIENTS([](const Inputs& x) { return x[0] * x[1]; }, {a, b});
  CHECK_GRADIENTS([](const Inputs& x) { return x[0] / x[1]; }, {a, pb});
  CHECK_GRADIENTS([](const Inputs& x) { return pow(x[0], x[1]); }, {pa, b});
  CHECK_GRADIENTS([](const Inputs& x) { return maximum(x[0], x[1]); }, {a, b});
  CHECK_GRADIENTS([](const Inputs& x) { return minimum(x[0], x[1]); }, {a, c});
  CHECK_GRADIENTS([](const Inputs& x) { return x[0] * x[0]; }, {a});  // one input used twice
}

TEST_CASE("gradcheck: scalar ops") {
  const Tensor a = leaf({3, 2}), p = positive_leaf({3, 2});
  CHECK_GRADIENTS([](const Inputs& x) { return x[0] + 2.0; }, {a});
  CHECK_GRADIENTS([](const Inputs& x) { return x[0] - 2.0; }, {a});
  CHECK_GRADIENTS([](const Inputs& x) { return 3.0 - x[0]; }, {a});
  CHECK_GRADIENTS([](const Inputs& x) { return x[0] * -1.5; }, {a});
  CHECK_GRADIENTS([](const Inputs& x) { return x[0] / 4.0; }, {a});
  CHECK_GRADIENTS([](const Inputs& x) { return 2.0 / x[0]; }, {p});
  CHECK_GRADIENTS([](const Inputs& x) { return pow(x[0], 2.5); }, {p});
  CHECK_GRADIENTS([](const Inputs& x) { return pow(x[0], 3.0); }, {a});
}

TEST_CASE("gradcheck: unary ops") {
  const Tensor a = leaf({4, 3}), p = positive_leaf({4, 3});
  CHECK_GRADIENTS([](const Inputs& x) { return -x[0]; }, {a});
  CHECK_GRADIENTS([](const Inputs& x) { return exp(x[0]); }, {a});
  CHECK_GRADIENTS([](const Inputs& x) { return log(x[0]); }, {p});
  CHECK_GRADIENTS([](const Inputs& x) { return sqrt(x[0]); }, {p});
  CHECK_GRADIENTS([](const Inputs& x) { return rsqrt(x[0]); }, {p});
  CHECK_GRADIENTS([](const Inputs& x) { return abs(x[0]); }, {a});
  CHECK_GRADIENTS([](const Inputs& x) { return square(x[0]); }, {a});
  CHECK_GRADIENTS([](const Inputs& x) { return tanh(x[0]); }, {a});
  CHECK_GRADIENTS([](const Inputs& x) { return sigmoid(x[0]); }, {a});
  CHECK_GRADIENTS([](const Inputs& x) { return relu(x[0]); }, {a});
  CHECK_GRADIENTS([](const Inputs& x) { return leaky_relu(x[0], 0.2); }, {a});
  CHECK_GRADIENTS([](const Inputs& x) { return gelu(x[0]); }, {a});
  CHECK_GRADIENTS([](const Inputs& x) { return clamp(x[0], -0.5, 0.7); }, {a});
}

TEST_CASE("gradcheck: where and masked_fill send gradients to the chosen side") {
  const Tensor a = leaf({2, 3}, 1), b = leaf({3}, 2);
  const Tensor condition = tensor({{1, 0, 1}, {0, 0, 1}}, {.dtype = DType::Float64});
  CHECK_GRADIENTS([condition](const Inputs& x) { return where(condition, x[0], x[1]); }, {a, b});
  CHECK_GRADIENTS([condition](const Inputs& x) { return masked_fill(x[0], condition, -5.0); }, {a});
}

// ---- the CPU kernels ---------------------------------------------------------------------------

using backend::BinaryOp;
using backend::UnaryOp;
using namespace testing::cpu_kernels;

TEST_CASE("cpu unary ops match the standard library on strided views") {
  std::vector<double> input{-2.5, -1, -0.25, 0, 0.5, 1, 3, 0.75};
  struct Case {
    UnaryOp op;
    double alpha, beta;
    double (*reference)(double, double, double);
  };
  const Case cases[] = {
      {UnaryOp::Neg, 0, 0, [](double x, double, double) { return -x; }},
      {UnaryOp::Abs, 0, 0, [](double x, double, double) { return std::fabs(x); }},
      {UnaryOp::Exp, 0, 0, [](double x, double, double) { return std::exp(x); }},
      {UnaryOp::Tanh, 0, 0, [](double x, double, double) { return std::tanh(x); }},
      {UnaryOp::Sigmoid, 0, 0, [](double x, double, double) { return 1 / (1 + std::exp(-x)); }},
      {UnaryOp::Relu, 0, 0, [](double x, double, double) { return x > 0 ? x : 0.0; }},
      {UnaryOp::Gelu, 0, 0,
       [](double x, double, double) { return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0))); }},
      {UnaryOp::Sign, 0, 0, [](double x, double, double) { return double((x > 0) - (x < 0)); }},
      {UnaryOp::Square, 0, 0, [](double x, double, double) { return x * x; }},
      {UnaryOp::LeakyRelu, 0.1, 0, [](double x, double a, double) { return x > 0 ? x : a * x; }},
      {UnaryOp::Clamp, -1, 0.5,
       [](double x, double a, double b) { return std::min(std::max(x, a), b); }},
      {UnaryOp::AddScalar, 2, 0, [](double x, double a, double) { return x + a; }},
      {UnaryOp::MulScalar, -3, 0, [](double x, double a, double) { return x * a; }},
      {UnaryOp::RsubScalar, 1, 0, [](double x, double a, double) { return a - x; }},
      {UnaryOp::RdivScalar, 2, 0, [](double x, double a, double) { return a / x; }},
  };
  for (const Case& c : cases) {
    // The input read transposed: a 4x2 view of the 2x4 buffer.
    std::vector<double> out(8);
    cpu().unary(c.op, view(out, {4, 2}), view(input, {4, 2}, {1, 4}), c.alpha, c.beta);
    for (int i = 0; i < 4; ++i)
      for (int j = 0; j < 2; ++j) {
        const double expected = c.reference(input[j * 4 + i], c.alpha, c.beta);
        if (std::isinf(expected))  // 2 / 0
          CHECK(out[i * 2 + j] == expected);
        else
          CHECK(out[i * 2 + j] == doctest::Approx(expected).epsilon(1e-14));
      }
  }
  std::vector<double> positive{0.25, 0.5, 2, 9}, out(4);
  cpu().unary(UnaryOp::Log, view(out, {4}), view(positive, {4}), 0, 0);
  CHECK(out[3] == doctest::Approx(std::log(9.0)));
  cpu().unary(UnaryOp::Rsqrt, view(out, {4}), view(positive, {4}), 0, 0);
  CHECK(out[0] == doctest::Approx(2.0));
  cpu().unary(UnaryOp::Sqrt, view(out, {4}), view(positive, {4}), 0, 0);
  CHECK(out[3] == doctest::Approx(3.0));
  cpu().unary(UnaryOp::PowScalar, view(out, {4}), view(positive, {4}), 1.5, 0);
  CHECK(out[1] == doctest::Approx(std::pow(0.5, 1.5)));

  // float32 GELU against the double formula; a broadcast scalar input; rank 0.
  std::vector<float> x32{-3, -0.5f, 0, 0.7f, 2}, y32(5);
  cpu().unary(UnaryOp::Gelu, view(y32, {5}), view(x32, {5}), 0, 0);
  for (int i = 0; i < 5; ++i)
    CHECK(y32[i] ==
          doctest::Approx(0.5 * x32[i] * (1 + std::erf(x32[i] / std::sqrt(2.0)))).epsilon(1e-6));
  std::vector<float> broadcast_out(6);
  cpu().unary(UnaryOp::Exp, view(broadcast_out, {2, 3}), view(x32, {2, 3}, {0, 0}, 3), 0, 0);
  CHECK(broadcast_out == std::vector<float>(6, std::exp(0.7f)));
  std::vector<float> scalar_in{4}, scalar_out{0};
  cpu().unary(UnaryOp::Sqrt, view(scalar_out, {}), view(scalar_in, {}), 0, 0);
  CHECK(scalar_out[0] == 2.0f);
}

TEST_CASE("cpu unary int64 ops stay in the integers, and float-only ops throw") {
  std::vector<std::int64_t> x{-5, 0, 3, std::numeric_limits<std::int64_t>::min()}, y(4);
  cpu().unary(UnaryOp::Neg, view(y, {3}), view(x, {3}), 0, 0);
  CHECK(std::vector<std::int64_t>(y.begin(), y.begin() + 3) == std::vector<std::int64_t>{5, 0, -3});
  cpu().unary(UnaryOp::Abs, view(y, {4}), view(x, {4}), 0, 0);
  CHECK(y[0] == 5);
  CHECK(y[3] == std::numeric_limits<std::int64_t>::min());  // wraps, as two's complement does
  cpu().unary(UnaryOp::Sign, view(y, {3}), view(x, {3}), 0, 0);
  CHECK(std::vector<std::int64_t>(y.begin(), y.begin() + 3) == std::vector<std::int64_t>{-1, 0, 1});
  cpu().unary(UnaryOp::Square, view(y, {3}), view(x, {3}), 0, 0);
  CHECK(y[0] == 25);
  cpu().unary(UnaryOp::AddScalar, view(y, {3}), view(x, {3}), 10, 0);
  CHECK(y[0] == 5);
  cpu().unary(UnaryOp::MulScalar, view(y, {3}), view(x, {3}), -2, 0);
  CHECK(y[2] == -6);
  cpu().unary(UnaryOp::RsubScalar, view(y, {3}), view(x, {3}), 1, 0);
  CHECK(y[0] == 6);
  CHECK_THROWS_AS(cpu().unary(UnaryOp::Exp, view(y, {3}), view(x, {3}), 0, 0), normgrad::Error);
  CHECK_THROWS_WITH(cpu().unary(UnaryOp::Sqrt, view(y, {3}), view(x, {3}), 0, 0),
                    doctest::Contains("cpu unary"));
}

TEST_CASE("cpu binary ops with broadcast, transposed and rank-0 operands") {
  // a: 2x3 contiguous; b: a row broadcast over rows (stride 0), then a column (stride 0).
  std::vector<double> a{1, 2, 3, 4, 5, 6}, row{10, 20, 30}, column{100, 200}, out(6);
  cpu().binary(BinaryOp::Add, view(out, {2, 3}), view(a, {2, 3}), view(row, {2, 3}, {0, 1}), 0);
  CHECK(out == std::vector<double>{11, 22, 33, 14, 25, 36});
  cpu().binary(BinaryOp::Sub, view(out, {2, 3}), view(column, {2, 3}, {1, 0}), view(a, {2, 3}), 0);
  CHECK(out == std::vector<double>{99, 98, 97, 196, 195, 194});
  // a read transposed: out (3x2) = a^T * 2
  std::vector<double> two{2};
  cpu().binary(BinaryOp::Mul, view(out, {3, 2}), view(a, {3, 2}, {1, 3}), view(two, {3, 2}, {0, 0}),
               0);
  CHECK(out == std::vector<double>{2, 8, 4, 10, 6, 12});
  cpu().binary(BinaryOp::Div, view(out, {2, 3}), view(a, {2, 3}), view(row, {2, 3}, {0, 1}), 0);
  CHECK(out[5] == doctest::Approx(0.2));
  cpu().binary(BinaryOp::Pow, view(out, {6}), view(a, {6}), view(two, {6}, {0}), 0);
  CHECK(out == std::vector<double>{1, 4, 9, 16, 25, 36});

  const double nan = std::numeric_limits<double>::quiet_NaN();
  std::vector<double> p{1, nan, 3}, q{2, 0, nan}, m(3);
  cpu().binary(BinaryOp::Maximum, view(m, {3}), view(p, {3}), view(q, {3}), 0);
  CHECK(m[0] == 2);
  CHECK(std::isnan(m[1]));
  CHECK(std::isnan(m[2]));
  cpu().binary(BinaryOp::Minimum, view(m, {3}), view(p, {3}), view(q, {3}), 0);
  CHECK(m[0] == 1);
  CHECK(std::isnan(m[2]));

  // Comparisons write 1/0 in out's dtype, here int64 and float32 from float64 inputs.
  std::vector<double> u{1, 2, 3, 4}, v{4, 2, 2, 4};
  std::vector<std::int64_t> mask(4);
  std::vector<float> float_mask(4);
  const std::pair<BinaryOp, std::vector<std::int64_t>> comparisons[] = {
      {BinaryOp::Eq, {0, 1, 0, 1}}, {BinaryOp::Ne, {1, 0, 1, 0}}, {BinaryOp::Lt, {1, 0, 0, 0}},
      {BinaryOp::Le, {1, 1, 0, 1}}, {BinaryOp::Gt, {0, 0, 1, 0}}, {BinaryOp::Ge, {0, 1, 1, 1}}};
  for (const auto& [op, expected] : comparisons) {
    cpu().binary(op, view(mask, {4}), view(u, {4}), view(v, {4}), 0);
    CHECK(mask == expected);
    cpu().binary(op, view(float_mask, {4}), view(u, {4}), view(v, {4}), 0);
    CHECK(float_mask == std::vector<float>(expected.begin(), expected.end()));
  }

  std::vector<float> s1{3}, s2{4}, s3{0};
  cpu().binary(BinaryOp::Mul, view(s3, {}), view(s1, {}), view(s2, {}), 0);
  CHECK(s3[0] == 12.0f);
  std::vector<float> none;
  cpu().binary(BinaryOp::Add, view(none, {0, 4}), view(none, {0, 4}), view(none, {0, 4}), 0);
}

TEST_CASE("cpu binary gradient ops and int64 arithmetic") {
  std::vector<double> dy{1, 2, -1, 0.5}, x{-1, 0.5, 2, -0.2}, out(4);
  cpu().binary(BinaryOp::TanhGrad, view(out, {4}), view(dy, {4}), view(x, {4}), 0);
  CHECK(out[1] == doctest::Approx(2 * (1 - 0.25)));
  cpu().binary(BinaryOp::SigmoidGrad, view(out, {4}), view(dy, {4}), view(x, {4}), 0);
  CHECK(out[1] == doctest::Approx(2 * 0.5 * 0.5));
  cpu().binary(BinaryOp::ReluGrad, view(out, {4}), view(dy, {4}), view(x, {4}), 0);
  CHECK(out == std::vector<double>{0, 2, -1, 0});
  cpu().binary(BinaryOp::LeakyReluGrad, view(out, {4}), view(dy, {4}), view(x, {4}), 0.01);
  CHECK(out[3] == doctest::Approx(0.005));
  cpu().binary(BinaryOp::GeluGrad, view(out, {4}), view(dy, {4}), view(x, {4}), 0);
  for (int i = 0; i < 4; ++i) {  // against a central difference of gelu
    const auto gelu = [](double t) { return 0.5 * t * (1 + std::erf(t / std::sqrt(2.0))); };
    const double h = 1e-6;
    CHECK(out[i] ==
          doctest::Approx(dy[i] * (gelu(x[i] + h) - gelu(x[i] - h)) / (2 * h)).epsilon(1e-7));
  }

  std::vector<std::int64_t> a{5, -3, 7}, b{2, 2, -1}, c(3);
  cpu().binary(BinaryOp::Add, view(c, {3}), view(a, {3}), view(b, {3}), 0);
  CHECK(c == std::vector<std::int64_t>{7, -1, 6});
  cpu().binary(BinaryOp::Sub, view(c, {3}), view(a, {3}), view(b, {3}), 0);
  CHECK(c == std::vector<std::int64_t>{3, -5, 8});
  cpu().binary(BinaryOp::Mul, view(c, {3}), view(a, {3}), view(b, {3}), 0);
  CHECK(c == std::vector<std::int64_t>{10, -6, -7});
  cpu().binary(BinaryOp::Maximum, view(c, {3}), view(a, {3}), view(b, {3}), 0);
  CHECK(c == std::vector<std::int64_t>{5, 2, 7});
  cpu().binary(BinaryOp::Minimum, view(c, {3}), view(a, {3}), view(b, {3}), 0);
  CHECK(c == std::vector<std::int64_t>{2, -3, -1});
  CHECK_THROWS_WITH(cpu().binary(BinaryOp::Div, view(c, {3}), view(a, {3}), view(b, {3}), 0),
                    doctest::Contains("int64 division is not supported"));
  CHECK_THROWS_AS(cpu().binary(BinaryOp::TanhGrad, view(c, {3}), view(a, {3}), view(b, {3}), 0),
                  normgrad::Error);
}

TEST_CASE("cpu elementwise ops on large tensors match a naive loop") {
  // Large enough to be split over threads, in the three row forms: all unit stride,
  // a broadcast row, a broadcast column.
  const std::int64_t rows = 300, cols = 517;
  std::vector<float> a = sample_values<float>(rows * cols, 1), row = sample_values<float>(cols, 2),
                     column = sample_values<float>(rows, 3), out(rows * cols);
  cpu().binary(BinaryOp::Add, view(out, {rows, cols}), view(a, {rows, cols}),
               view(row, {rows, cols}, {0, 1}), 0);
  bool all_equal = true;
  for (std::int64_t i = 0; i < rows; ++i)
    for (std::int64_t j = 0; j < cols; ++j)
      all_equal = all_equal && out[i * cols + j] == a[i * cols + j] + row[j];
  CHECK(all_equal);
  cpu().binary(BinaryOp::Mul, view(out, {rows, cols}), view(column, {rows, cols}, {1, 0}),
               view(a, {rows, cols}), 0);
  all_equal = true;
  for (std::int64_t i = 0; i < rows; ++i)
    for (std::int64_t j = 0; j < cols; ++j)
      all_equal = all_equal && out[i * cols + j] == column[i] * a[i * cols + j];
  CHECK(all_equal);
  cpu().unary(UnaryOp::Tanh, view(out, {cols, rows}), view(a, {cols, rows}, {1, cols}), 0, 0);
  all_equal = true;
  for (std::int64_t i = 0; i < cols; ++i)
    for (std::int64_t j = 0; j < rows; ++j)
      all_equal = all_equal && out[i * rows + j] == std::tanh(a[j * cols + i]);
  CHECK(all_equal);
}

TEST_CASE("cpu where selects with a condition of any dtype, broadcast") {
  std::vector<std::int64_t> cond{1, 0, 1};
  std::vector<float> a{1, 2, 3, 4, 5, 6}, b{-1}, out(6);
  cpu().where(view(out, {2, 3}), view(cond, {2, 3}, {0, 1}), view(a, {2, 3}),
              view(b, {2, 3}, {0, 0}));
  CHECK(out == std::vector<float>{1, -1, 3, 4, -1, 6});
  std::vector<double> float_cond{0, 0.5}, x{1, 2}, y{3, 4}, z(2);
  cpu().where(view(z, {2}), view(float_cond, {2}), view(x, {2}), view(y, {2}));
  CHECK(z == std::vector<double>{3, 2});
}

// The vectorised float32 exp, sigmoid and tanh (backends/cpu/simd/vector_exp.h), and the
// softmax row steps built on them.

namespace {

using backend::cpu::VectorPath;

// |got - exact| in units of the float spacing at `exact` (2^-149 below FLT_MIN, so results that
// underflow are measured in denormal ulps); 0 or infinity where a value is not finite.
double ulp_error(float got, double exact) {
  if (std::isnan(exact)) return std::isnan(got) ? 0.0 : HUGE_VAL;
  const float rounded = static_cast<float>(exact);
  if (std::isinf(rounded) || std::isinf(got)) return got == rounded ? 0.0 : HUGE_VAL;
  const int exponent = exact == 0 ? -126 : std::max(std::ilogb(exact), -126);
  return std::fabs(static_cast<double>(got) - exact) / std::ldexp(1.0, exponent - 23);
}

float float_from_bits(std::uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, sizeof value);
  return value;
}

// Ascending inputs: a sweep of [-104, 89] (past both ends of exp's finite, nonzero range), then
// consecutive floats near -0.2 and 0.3, where neighbouring inputs are closer than an ulp of
// the output apart and a careless evaluation stops being monotone.
std::vector<std::vector<float>> ascending_inputs() {
  std::vector<float> sweep, negative, positive;
  const int steps = 1 << 20;
  for (int i = 0; i <= steps; ++i) sweep.push_back(static_cast<float>(-104.0 + 193.0 * i / steps));
  for (float x = -0.2f; negative.size() < (1u << 18); x = std::nextafter(x, 1.0f))
    negative.push_back(x);
  for (float x = 0.3f; positive.size() < (1u << 18); x = std::nextafter(x, 1.0f))
    positive.push_back(x);
  return {sweep, negative, positive};
}

}  // namespace

TEST_CASE("cpu vector exp, sigmoid and tanh: ulp bounds, monotone, special values, both paths") {
  std::vector<VectorPath> paths{VectorPath::Portable};
  if (backend::cpu::avx2_exp_available()) paths.push_back(VectorPath::Avx2Fma);
  if (backend::cpu::avx2_exp_available())
    MESSAGE("AVX2+FMA available: both paths tested");
  else
    MESSAGE("no AVX2+FMA on this CPU: portable path only");
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const std::vector<float> special{0.0f,    -0.0f,   inf,     -inf,    nan,     88.72f,
                                   88.73f,  -87.3f,  -103.9f, -104.f,  1000.f,  -1000.f,
                                   1e-30f,  -1e-30f, 0.625f,  -0.625f, 0.6249f, 9.0f,
                                   -100.0f, -88.03f, -88.04f, 1e-45f,  -1e-45f};
  std::vector<std::vector<float>> inputs = ascending_inputs();
  inputs.push_back(special);
  std::vector<float> random_bits(1 << 18);  // every kind of float: NaN, inf, denormal, huge
  for (std::size_t i = 0; i < random_bits.size(); ++i)
    random_bits[i] = float_from_bits(philox::random_words(5, i).w[0]);
  inputs.push_back(random_bits);

  struct Function {
    const char* name;
    void (*row)(float*, const float*, std::int64_t, VectorPath);
    double (*reference)(double);
    double bound;  // the largest error measured over every float32 input, rounded up
  };
  const Function functions[] = {
      {"exp", backend::cpu::exp_row, [](double x) { return std::exp(x); }, 1.02},
      {"sigmoid", backend::cpu::sigmoid_row, [](double x) { return 1 / (1 + std::exp(-x)); }, 2.5},
      {"tanh", backend::cpu::tanh_row, [](double x) { return std::tanh(x); }, 1.4},
  };
  for (const Function& function : functions)
    for (VectorPath path : paths) {
      const bool vector = path == VectorPath::Avx2Fma;
      INFO(function.name, vector ? " (AVX2+FMA)" : " (portable)");
      for (std::size_t set = 0; set < inputs.size(); ++set) {
        const std::vector<float>& x = inputs[set];
        std::vector<float> y(x.size());
        function.row(y.data(), x.data(), static_cast<std::int64_t>(x.size()), path);
        double worst = 0;
        float worst_x = 0;
        bool monotone = true;
        for (std::size_t i = 0; i < x.size(); ++i) {
          const double error = ulp_error(y[i], function.reference(x[i]));
          if (error > worst) {
            worst = error;
            worst_x = x[i];
          }
          if (i > 0 && y[i] < y[i - 1]) monotone = false;
        }
        INFO("input set ", set, ", worst at x = ", worst_x);
        // The portable path is the platform's libm (std::tanh is not ours to bound).
        if (vector || function.row != backend::cpu::tanh_row) CHECK(worst <= function.bound);
        if (vector && set < 3) CHECK(monotone);  // the ascending sets, for our kernels
      }
    }

  if (backend::cpu::avx2_exp_available()) {
    // The kernel computes exactly what the scalar statement of its math does.
    for (const std::vector<float>& x : inputs) {
      std::vector<float> y(x.size());
      backend::cpu::exp_row(y.data(), x.data(), static_cast<std::int64_t>(x.size()),
                            VectorPath::Avx2Fma);
      bool identical = true;
      for (std::size_t i = 0; i < x.size(); ++i) {
        const float model = backend::cpu::exp_float_model(x[i]);
        identical = identical &&
                    (std::isnan(model) ? std::isnan(y[i]) : std::memcmp(&model, &y[i], 4) == 0);
      }
      CHECK(identical);
    }
  }

  // The edges, exactly, on every path.
  for (VectorPath path : paths) {
    const auto apply = [path](void (*row)(float*, const float*, std::int64_t, VectorPath),
                              float x) {
      float y = 0;
      row(&y, &x, 1, path);
      return y;
    };
    const auto exp = [&](float x) { return apply(backend::cpu::exp_row, x); };
    const auto sigmoid = [&](float x) { return apply(backend::cpu::sigmoid_row, x); };
    const auto tanh = [&](float x) { return apply(backend::cpu::tanh_row, x); };
    CHECK(exp(0.0f) == 1.0f);
    CHECK(exp(-0.0f) == 1.0f);
    CHECK(exp(inf) == inf);
    CHECK(exp(-inf) == 0.0f);
    CHECK(std::isnan(exp(nan)));
    CHECK(std::isfinite(exp(88.72f)));
    CHECK(exp(88.73f) == inf);
    CHECK(exp(-103.9f) == std::numeric_limits<float>::denorm_min());  // gradual underflow
    CHECK(exp(-104.0f) == 0.0f);
    CHECK(sigmoid(-0.0f) == 0.5f);
    CHECK(sigmoid(inf) == 1.0f);
    CHECK(sigmoid(1000.0f) == 1.0f);
    CHECK(sigmoid(-inf) == 0.0f);
    CHECK(sigmoid(-1000.0f) == 0.0f);
    CHECK(sigmoid(-100.0f) > 0.0f);  // e^-100, a denormal, not 1 / (1 + inf)
    CHECK(std::isnan(sigmoid(nan)));
    CHECK(tanh(1e-30f) == 1e-30f);
    CHECK(std::signbit(tanh(-0.0f)));
    CHECK(tanh(inf) == 1.0f);
    CHECK(tanh(-1000.0f) == -1.0f);
    CHECK(std::isnan(tanh(nan)));
  }
}

TEST_CASE("cpu vector exp rows: any length and position, in place, through unary, any threads") {
  const std::vector<float> x = sample_values<float>(300 * 517, 31);
  std::vector<float> whole(x.size());
  backend::cpu::exp_row(whole.data(), x.data(), static_cast<std::int64_t>(x.size()));
  // Every length 1..17 from every offset 0..8: the padded tail computes what the body does.
  // Values in [-120, 120) mix, within one vector, lanes whose results are normal with lanes
  // that overflow or underflow, which the kernel handles on a slower path.
  std::vector<float> wide(x.begin(), x.begin() + 64), wide_whole(64);
  for (float& v : wide) v *= 120;
  backend::cpu::exp_row(wide_whole.data(), wide.data(), 64);
  bool same = true;
  for (std::int64_t count = 1; count <= 17; ++count)
    for (std::int64_t offset = 0; offset <= 8; ++offset) {
      std::vector<float> part(count), wide_part(count);
      backend::cpu::exp_row(part.data(), x.data() + offset, count);
      backend::cpu::exp_row(wide_part.data(), wide.data() + offset, count);
      for (std::int64_t i = 0; i < count; ++i)
        same = same && part[i] == whole[offset + i] && wide_part[i] == wide_whole[offset + i];
    }
  CHECK(same);
  std::vector<float> in_place(x.begin(), x.begin() + 1001);
  backend::cpu::exp_row(in_place.data(), in_place.data(), 1001);
  CHECK(std::equal(in_place.begin(), in_place.end(), whole.begin()));

  // Through the backend, contiguous, split over 1 or 2 threads: the same bits.
  std::vector<float> input = x;
  for (int threads : {1, 2}) {
    std::vector<float> out(x.size());
    with_threads(threads, [&] {
      cpu().unary(UnaryOp::Exp, view(out, {300, 517}), view(input, {300, 517}), 0, 0);
    });
    CHECK(out == whole);
  }
  // Odd lengths through unary: sigmoid and tanh against double.
  for (std::int64_t n : {1, 7, 33, 1000, 4097}) {
    std::vector<float> values(x.begin(), x.begin() + n), sig(n), th(n);
    for (float& v : values) v *= 12;
    cpu().unary(UnaryOp::Sigmoid, view(sig, {n}), view(values, {n}), 0, 0);
    cpu().unary(UnaryOp::Tanh, view(th, {n}), view(values, {n}), 0, 0);
    double worst_sigmoid = 0, worst_tanh = 0;
    for (std::int64_t i = 0; i < n; ++i) {
      worst_sigmoid =
          std::max(worst_sigmoid, ulp_error(sig[i], 1 / (1 + std::exp(-double(values[i])))));
      worst_tanh = std::max(worst_tanh, ulp_error(th[i], std::tanh(double(values[i]))));
    }
    CHECK(worst_sigmoid <= 2.5);
    CHECK(worst_tanh <= 2.0);  // 1.4 for the AVX2 kernel; the bound here also covers libm's
  }

  // The softmax steps. The row max, on every path, with the max, a NaN or only -inf anywhere.
  std::vector<VectorPath> paths{VectorPath::Portable};
  if (backend::cpu::avx2_exp_available()) paths.push_back(VectorPath::Avx2Fma);
  for (VectorPath path : paths)
    for (std::int64_t n : {1, 7, 31, 32, 33, 100, 1000}) {
      bool max_ok = true;
      for (std::int64_t at = 0; at < n; at += std::max<std::int64_t>(1, n / 13)) {
        std::vector<float> row(x.begin(), x.begin() + n);
        row[at] = 2;  // sample_values lie in [-1, 1)
        max_ok = max_ok && backend::cpu::max_row(row.data(), n, path) == 2.0f;
        row[at] = std::numeric_limits<float>::quiet_NaN();
        max_ok = max_ok && std::isnan(backend::cpu::max_row(row.data(), n, path));
      }
      std::vector<float> minus_inf(n, -std::numeric_limits<float>::infinity());
      max_ok = max_ok && backend::cpu::max_row(minus_inf.data(), n, path) == minus_inf[0];
      CHECK(max_ok);
    }
  // The sum of exp(x - shift) in double, out written or not, on every path.
  for (VectorPath path : paths)
    for (std::int64_t n : {1, 7, 33, 1000, 4097}) {
      std::vector<float> out(n);
      const float shift = 0.75f;
      const double sum = backend::cpu::exp_shifted_sum_row(out.data(), x.data(), n, shift, path);
      CHECK(backend::cpu::exp_shifted_sum_row(nullptr, x.data(), n, shift, path) == sum);
      double reference = 0;
      bool values_match = true;
      for (std::int64_t i = 0; i < n; ++i) {
        const float shifted = x[i] - shift;
        reference += std::exp(double(shifted));
        values_match = values_match && ulp_error(out[i], std::exp(double(shifted))) <= 1.02;
      }
      CHECK(values_match);
      CHECK(sum == doctest::Approx(reference).epsilon(2.1 * std::ldexp(1.0, -23)));
    }
}

// ---- on a GPU: CPU against CUDA ----------------------------------------------------------------

// Values and gradients: every UnaryOp (through the public functions and scalar operators), every
// BinaryOp with broadcasting, comparisons, where and masked_fill; on contiguous, transposed and
// sliced inputs, in float32 and float64. Tolerances: testing::elementwise (one rounding or a
// few libm ulps per value); gradients that sum over broadcast dims use testing::summed.
// Comparisons and selections are exact.

using testing::elementwise;
using testing::exact;
using testing::parity_mismatch;
using testing::summed;

namespace {

using Unary = std::function<Tensor(const Tensor&)>;

struct UnaryCase {
  const char* name;
  Unary op;
  bool positive;  // needs inputs in [0.5, 2] (log, sqrt, fractional powers, reciprocals)
};

const std::vector<UnaryCase> unary_cases = {
    {"neg", [](const Tensor& x) { return -x; }, false},
    {"exp", [](const Tensor& x) { return exp(x); }, false},
    {"log", [](const Tensor& x) { return log(x); }, true},
    {"sqrt", [](const Tensor& x) { return sqrt(x); }, true},
    {"rsqrt", [](const Tensor& x) { return rsqrt(x); }, true},
    {"abs", [](const Tensor& x) { return abs(x); }, false},
    {"square", [](const Tensor& x) { return square(x); }, false},
    {"sign", [](const Tensor& x) { return sign(x); }, false},
    {"tanh", [](const Tensor& x) { return tanh(x); }, false},
    {"sigmoid", [](const Tensor& x) { return sigmoid(x); }, false},
    {"relu", [](const Tensor& x) { return relu(x); }, false},
    {"leaky_relu", [](const Tensor& x) { return leaky_relu(x, 0.2); }, false},
    {"gelu", [](const Tensor& x) { return gelu(x); }, false},
    {"clamp", [](const Tensor& x) { return clamp(x, -0.5, 0.8); }, false},
    {"pow 2.5", [](const Tensor& x) { return pow(x, 2.5); }, true},
    {"pow -1.5", [](const Tensor& x) { return pow(x, -1.5); }, true},
    {"pow 3", [](const Tensor& x) { return pow(x, 3.0); }, false},
    {"add scalar", [](const Tensor& x) { return x + 0.75; }, false},
    {"sub scalar", [](const Tensor& x) { return x - 0.25; }, false},
    {"mul scalar", [](const Tensor& x) { return x * -1.25; }, false},
    {"div scalar", [](const Tensor& x) { return x / 3.0; }, false},
    {"rsub scalar", [](const Tensor& x) { return 2.0 - x; }, false},
    {"rdiv scalar", [](const Tensor& x) { return 1.5 / x; }, true},
};

// The three layouts every op sees: a contiguous [6, 9] block, the transpose of a [9, 6] one
// and every other column of a [6, 18] one. The function views its input accordingly.
struct ParityLayout {
  const char* name;
  Shape stored;
  std::function<Tensor(const Tensor&)> view;
};

const std::vector<ParityLayout> parity_layouts = {
    {"contiguous", {6, 9}, [](const Tensor& x) { return x; }},
    {"transposed", {9, 6}, [](const Tensor& x) { return x.t(); }},
    {"sliced", {6, 18}, [](const Tensor& x) { return x.slice(1, 1, 18, 2); }},
};

Tensor unary_input(const Shape& shape, bool positive, DType dtype, std::uint64_t seed) {
  return positive ? testing::uniform(shape, seed, 0.5, 2.0, dtype)
                  : testing::normal(shape, seed, dtype, 1.5);
}

}  // namespace

TEST_CASE("cuda parity: unary ops and their gradients, contiguous and strided") {
  SKIP_PARITY_WITHOUT_CUDA();
  for (const DType dtype : {DType::Float32, DType::Float64}) {
    for (const UnaryCase& c : unary_cases) {
      for (const ParityLayout& layout : parity_layouts) {
        INFO(c.name << ", " << layout.name << ", " << dtype);
        const Unary op = c.op;
        const auto view = layout.view;
        CHECK_NO_MISMATCH(parity_mismatch([&](const Inputs& in) { return op(view(in[0])); },
                                          {unary_input(layout.stored, c.positive, dtype, 1)},
                                          elementwise(dtype)));
      }
    }
  }
}

TEST_CASE("cuda parity: unary ops on a large odd-sized tensor") {
  SKIP_PARITY_WITHOUT_CUDA();
  // 257 x 301 = 77357 values: many blocks, and a partial last one.
  for (const UnaryCase& c : unary_cases) {
    INFO(c.name);
    const Unary op = c.op;
    CHECK_NO_MISMATCH(parity_mismatch([&](const Inputs& in) { return op(in[0]); },
                                      {unary_input({257, 301}, c.positive, DType::Float32, 2)},
                                      elementwise(DType::Float32)));
  }
}

TEST_CASE("cuda parity: binary ops with broadcasting, values and reduced gradients") {
  SKIP_PARITY_WITHOUT_CUDA();
  using Binary = std::function<Tensor(const Tensor&, const Tensor&)>;
  const std::vector<std::pair<const char*, Binary>> ops = {
      {"add", [](const Tensor& a, const Tensor& b) { return a + b; }},
      {"sub", [](const Tensor& a, const Tensor& b) { return a - b; }},
      {"mul", [](const Tensor& a, const Tensor& b) { return a * b; }},
      {"div", [](const Tensor& a, const Tensor& b) { return a / b; }},
      {"pow", [](const Tensor& a, const Tensor& b) { return pow(a, b); }},
      {"maximum", [](const Tensor& a, const Tensor& b) { return maximum(a, b); }},
      {"minimum", [](const Tensor& a, const Tensor& b) { return minimum(a, b); }},
  };
  for (const DType dtype : {DType::Float32, DType::Float64}) {
    // a [4, 1, 5] against b [3, 5]: out [4, 3, 5]; a's gradient sums 3 values, b's 4.
    const Tensor a = testing::uniform({4, 1, 5}, 3, 0.5, 2.0, dtype);
    const Tensor b = testing::uniform({3, 5}, 4, 0.5, 2.0, dtype) - 1.0;
    for (const auto& entry : ops) {
      const auto& [name, op] = entry;
      INFO(entry.first << ", " << dtype);  // a binding cannot be captured (clang 14)
      const Binary f = op;
      const Tensor divisor_safe_b = std::string(name) == "div" ? b + 2.0 : b;
      CHECK_NO_MISMATCH(parity_mismatch([&](const Inputs& in) { return f(in[0], in[1]); },
                                        {a, divisor_safe_b}, elementwise(dtype),
                                        summed(dtype, 4, 4.0)));
      // The same with the operands swapped (the broadcast dims move to the other side), for
      // the ops whose domain allows it.
      if (std::string(name) != "pow" && std::string(name) != "div")
        CHECK_NO_MISMATCH(parity_mismatch([&](const Inputs& in) { return f(in[1], in[0]); }, {a, b},
                                          elementwise(dtype), summed(dtype, 4, 4.0)));
    }
  }
}

TEST_CASE("cuda parity: binary ops on transposed, sliced and expanded operands") {
  SKIP_PARITY_WITHOUT_CUDA();
  for (const DType dtype : {DType::Float32, DType::Float64}) {
    INFO(dtype);
    const Tensor a = testing::uniform({5, 4}, 5, 0.5, 2.0, dtype);  // used as a.t(): [4, 5]
    const Tensor b = testing::uniform({8, 5}, 6, 0.5, 2.0, dtype);  // every other row: [4, 5]
    const Tensor c = testing::uniform({5}, 7, 0.5, 2.0, dtype);     // expanded to [4, 5]
    const auto f = [](const Inputs& in) {
      const Tensor x = in[0].t(), y = in[1].slice(0, 0, 8, 2), z = in[2].expand({4, 5});
      return cat({(x + y).flatten(), (x - z).flatten(), (x * y).flatten(), (y / z).flatten(),
                  pow(x, y).flatten(), maximum(x, z).flatten(), minimum(y, x).flatten()});
    };
    CHECK_NO_MISMATCH(parity_mismatch(f, {a, b, c}, elementwise(dtype), summed(dtype, 16, 8.0)));
  }
}

TEST_CASE("cuda parity: maximum and minimum share the gradient equally on ties") {
  SKIP_PARITY_WITHOUT_CUDA();
  // Small integers: many ties, and every value and gradient (dy, dy / 2, 0) is exact.
  Generator generator(8);
  const Tensor a = randint(-2, 3, {6, 7}, generator).to(DType::Float32);
  const Tensor b = randint(-2, 3, {6, 7}, generator).to(DType::Float32);
  CHECK_NO_MISMATCH(parity_mismatch(
      [](const Inputs& in) {
        return cat({maximum(in[0], in[1]), minimum(in[0], in[1])});
      },
      {a, b}, exact));
}

TEST_CASE("cuda parity: comparisons, with ties, against tensors and scalars, are exact") {
  SKIP_PARITY_WITHOUT_CUDA();
  for (const DType dtype : {DType::Float32, DType::Float64}) {
    INFO(dtype);
    Generator generator(9);
    const Tensor a = randint(-2, 3, {5, 6}, generator).to(dtype);
    const Tensor b = randint(-2, 3, {6}, generator).to(dtype);  // broadcast along rows
    const auto f = [](const Inputs& in) {
      const Tensor x = in[0], y = in[1], xt = in[0].t().contiguous().t();  // strided
      return cat({eq(x, y), ne(x, y), lt(x, y), le(x, y), gt(x, y), ge(x, y), eq(xt, 1.0),
                  ne(x, 0.0), lt(x, 0.5), le(x, -1.0), gt(x, -0.5), ge(x, 2.0)});
    };
    CHECK_NO_MISMATCH(parity_mismatch(f, {a, b}, exact));
  }
  // int64 operands.
  Generator generator(10);
  const Tensor i = randint(-3, 4, {4, 5}, generator), j = randint(-3, 4, {4, 5}, generator);
  CHECK_NO_MISMATCH(parity_mismatch(
      [](const Inputs& in) {
        return cat({lt(in[0], in[1]), ge(in[0].t(), in[1].t()).t()});
      },
      {i, j}, exact));
}

TEST_CASE("cuda parity: where and masked_fill with broadcasting, values and gradients") {
  SKIP_PARITY_WITHOUT_CUDA();
  for (const DType dtype : {DType::Float32, DType::Float64}) {
    INFO(dtype);
    const Tensor selector = testing::normal({4, 1}, 11, dtype);
    const Tensor a = testing::normal({4, 5}, 12, dtype);
    const Tensor b = testing::normal({5}, 13, dtype);  // its gradient sums over 4 rows
    CHECK_NO_MISMATCH(parity_mismatch(
        [](const Inputs& in) { return where(gt(in[0].detach(), 0.0), in[1].t().t(), in[2]); },
        {selector, a, b}, exact, summed(dtype, 4, 4.0)));
    Generator generator(14);
    const Tensor mask = randint(0, 2, {1, 5}, generator);  // int64, broadcast over rows
    CHECK_NO_MISMATCH(parity_mismatch(
        [](const Inputs& in) {
          return cat({masked_fill(in[0], in[1], -7.5).flatten(),
                      masked_fill(in[0].t(), in[1].t(), 3.0).flatten()});
        },
        {a, mask}, exact));
  }
}

// ---- bfloat16 ----------------------------------------------------------------------------------

// The CPU computes bfloat16 through float32 working copies of its operands
// (backends/bfloat16_widening.h), laid out contiguously but for their broadcast dims, so there
// the reference is the float32 kernel on the values laid out as the copy lays them out
// (laid_out_as_copied, in bfloat16_twins.h). CUDA's kernels are native: they widen each value
// they load to float32, compute as their float32 instantiation does on the same view, and round
// once as they store. Every case runs on the CPU, and again on a GPU where there is one.

using testing::bits_mismatch;
using namespace testing::twins;

namespace {

// The layouts the elementwise kernels tell apart, each of shape [rows, cols]: contiguous
// (4-element vectors, then a tail), a transposed view (the strided kernel), every other column
// of a wider tensor (one strided dim), a row broadcast down the rows and a column broadcast
// along them (stride 0 outside, and inside, the rows).
struct Layout {
  const char* name;
  View view;  // from a base of shape [rows, 2 * cols]
};

std::vector<Layout> layouts(std::int64_t rows, std::int64_t cols) {
  return {
      {"contiguous", [=](const Tensor& t) { return t.narrow(1, 0, cols).contiguous(); }},
      {"transposed", [=](const Tensor& t) { return t.narrow(1, 0, cols).t().contiguous().t(); }},
      {"every other column", [=](const Tensor& t) { return t.slice(1, 0, 2 * cols, 2); }},
      {"broadcast row",
       [=](const Tensor& t) {
         return t.narrow(0, 0, 1).narrow(1, 0, cols).expand({rows, cols});
       }},
      {"broadcast column",
       [=](const Tensor& t) {
         return t.narrow(1, 0, 1).expand({rows, cols});
       }},
  };
}

Tensor unary(UnaryOp op, const Tensor& in, double alpha, double beta) {
  Tensor out = empty_like_dtype(in, in.dtype());
  backend_of(in).unary(op, detail::ref(out), detail::ref(in), alpha, beta);
  return out;
}

Tensor binary(BinaryOp op, const Tensor& a, const Tensor& b, double alpha, DType out_dtype) {
  Tensor out = empty_like_dtype(a, out_dtype);
  backend_of(a).binary(op, detail::ref(out), detail::ref(a), detail::ref(b), alpha);
  return out;
}

// Ops whose float32 result depends on the domain get positive inputs, so that the values
// compared are numbers rather than NaNs.
bool wants_positive(UnaryOp op) {
  return op == UnaryOp::Log || op == UnaryOp::Sqrt || op == UnaryOp::Rsqrt ||
         op == UnaryOp::PowScalar;
}

}  // namespace

TEST_CASE(
    "bfloat16 kernels: unary ops are the float32 kernels on the same values, rounded "
    "once") {
  for (const Device device : devices_present()) {
    CAPTURE(device);
    Generator generator(41);
    const std::int64_t rows = 37, cols = 130;
    const Tensor signed_base = to_bfloat16(randn({rows, 2 * cols}, generator) * 3.0);
    const Tensor positive_base = to_bfloat16(rand({rows, 2 * cols}, generator) * 4.0 + 0.05);
    struct Case {
      UnaryOp op;
      double alpha = 0, beta = 0;
    };
    const std::vector<Case> cases = {
        {UnaryOp::Neg},
        {UnaryOp::Abs},
        {UnaryOp::Exp},
        {UnaryOp::Log},
        {UnaryOp::Sqrt},
        {UnaryOp::Rsqrt},
        {UnaryOp::Tanh},
        {UnaryOp::Sigmoid},
        {UnaryOp::Relu},
        {UnaryOp::Gelu},
        {UnaryOp::Sign},
        {UnaryOp::Square},
        {UnaryOp::LeakyRelu, 0.01},
        {UnaryOp::Clamp, -1.5, 2.0},
        {UnaryOp::PowScalar, 1.7},
        {UnaryOp::PowScalar, 2.0},
        {UnaryOp::AddScalar, 0.3},
        {UnaryOp::MulScalar, -1.1},
        {UnaryOp::RsubScalar, 2.5},
        {UnaryOp::RdivScalar, 0.7},
    };
    for (const Layout& layout : layouts(rows, cols)) {
      for (const Case& c : cases) {
        CAPTURE(layout.name);
        CAPTURE(backend::unary_name(c.op));
        const Tensor& base = wants_positive(c.op) ? positive_base : signed_base;
        const Operand in = view_of(base.to(device), layout.view);
        const Tensor native = unary(c.op, in.stored, c.alpha, c.beta);
        const Tensor reference = to_bfloat16(unary(c.op, in.widened, c.alpha, c.beta));
        CHECK_NO_MISMATCH(bits_mismatch(native, reference));
      }
    }
  }
}

TEST_CASE(
    "bfloat16 kernels: binary ops, comparisons and where are the float32 kernels, "
    "rounded") {
  for (const Device device : devices_present()) {
    CAPTURE(device);
    Generator generator(42);
    const std::int64_t rows = 29, cols = 66;
    // b draws from a few values, so that comparisons meet ties, and stays away from 0 for Div.
    const Tensor a_base = to_bfloat16(randn({rows, 2 * cols}, generator) * 2.0);
    const Tensor b_base =
        to_bfloat16(randint(1, 5, {rows, 2 * cols}, generator).to(DType::Float32) * 0.5 - 1.25);
    const Tensor ties_base =
        to_bfloat16(randint(1, 5, {rows, 2 * cols}, generator).to(DType::Float32) * 0.5 - 1.25);
    const Tensor positive_base = to_bfloat16(rand({rows, 2 * cols}, generator) + 0.5);
    const std::vector<BinaryOp> arithmetic = {
        BinaryOp::Add,         BinaryOp::Sub,      BinaryOp::Mul,      BinaryOp::Div,
        BinaryOp::Pow,         BinaryOp::Maximum,  BinaryOp::Minimum,  BinaryOp::TanhGrad,
        BinaryOp::SigmoidGrad, BinaryOp::ReluGrad, BinaryOp::GeluGrad, BinaryOp::LeakyReluGrad};
    const std::vector<BinaryOp> comparisons = {BinaryOp::Eq, BinaryOp::Ne, BinaryOp::Lt,
                                               BinaryOp::Le, BinaryOp::Gt, BinaryOp::Ge};
    const auto contiguous = layouts(rows, cols).front();
    for (const Layout& layout : layouts(rows, cols)) {
      CAPTURE(layout.name);
      // a in each layout against a contiguous b: broadcast and strided operands meet plain ones.
      const Operand b = view_of(b_base.to(device), contiguous.view);
      for (const BinaryOp op : arithmetic) {
        CAPTURE(backend::binary_name(op));
        const Tensor& a_source = op == BinaryOp::Pow ? positive_base : a_base;
        const Operand a = view_of(a_source.to(device), layout.view);
        const double alpha = op == BinaryOp::LeakyReluGrad ? 0.02 : 0.0;
        const Tensor native = binary(op, a.stored, b.stored, alpha, DType::BFloat16);
        const Tensor reference =
            to_bfloat16(binary(op, a.widened, b.widened, alpha, DType::Float32));
        CHECK_NO_MISMATCH(bits_mismatch(native, reference));
      }
      const Operand a = view_of(a_base.to(device), layout.view);
      const Operand ties = view_of(ties_base.to(device), layout.view);
      for (const BinaryOp op : comparisons) {
        CAPTURE(backend::binary_name(op));
        for (const DType out : {DType::BFloat16, DType::Float32}) {
          CAPTURE(out);
          const Tensor native = binary(op, ties.stored, b.stored, 0.0, out);
          const Tensor reference = binary(op, ties.widened, b.widened, 0.0, out);
          CHECK_NO_MISMATCH(bits_mismatch(native, reference));
          // Ties and differences both occur, so every comparison answers both ways.
          const double trues = to_float32(native).sum().item();
          CHECK(trues > 0);
          CHECK(trues < static_cast<double>(native.numel()));
        }
      }
      // where with a bfloat16 condition (zeros among its values) and bfloat16 values: the chosen
      // values are moved, bit for bit.
      const Operand cond = view_of(to_bfloat16(to_float32(b_base) + 0.25).to(device), layout.view);
      const Tensor chosen = where(cond.stored, a.stored, b.stored);
      const Tensor reference = to_bfloat16(where(cond.widened, a.widened, b.widened));
      CHECK_NO_MISMATCH(bits_mismatch(chosen, reference));
    }
  }
}

TEST_CASE("bfloat16 kernels: elementwise ops in place read each value before they write it") {
  // out is an operand itself, as in x.add_(y) or x.exp_(): the same results as out of place.
  for (const Device device : devices_present()) {
    CAPTURE(device);
    Generator generator(47);
    const Tensor a = to_bfloat16(randn({33, 70}, generator)).to(device);
    const Tensor b = to_bfloat16(randn({33, 70}, generator)).to(device);
    Tensor sum = a.clone(), product = a.clone(), exps = a.clone();
    backend_of(a).binary(BinaryOp::Add, detail::ref(sum), detail::ref(sum), detail::ref(b), 0);
    backend_of(a).binary(BinaryOp::Mul, detail::ref(product), detail::ref(b), detail::ref(product),
                         0);
    backend_of(a).unary(UnaryOp::Exp, detail::ref(exps), detail::ref(exps), 0, 0);
    CHECK_NO_MISMATCH(bits_mismatch(sum, binary(BinaryOp::Add, a, b, 0, DType::BFloat16), "a + b"));
    CHECK_NO_MISMATCH(
        bits_mismatch(product, binary(BinaryOp::Mul, b, a, 0, DType::BFloat16), "b a"));
    CHECK_NO_MISMATCH(bits_mismatch(exps, unary(UnaryOp::Exp, a, 0, 0), "exp(a)"));
  }
}
