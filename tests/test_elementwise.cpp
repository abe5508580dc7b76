// Elementwise ops: values against the C++ standard library, dtype rules, and errors.

#include "helpers.h"

using namespace normgrad;
using testing::all_close;

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
