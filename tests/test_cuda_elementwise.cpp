// CPU-versus-CUDA parity of the elementwise ops, values and gradients: every UnaryOp (through
// the public functions and scalar operators), every BinaryOp with broadcasting, comparisons,
// where and masked_fill; on contiguous, transposed and sliced inputs, in float32 and float64.
// Tolerances: testing::elementwise (one rounding or a few libm ulps per value); gradients that
// sum over broadcast dims use testing::summed. Comparisons and selections are exact.

#include <functional>
#include <string>
#include <vector>

#include "cuda_parity.h"

using namespace normgrad;
using testing::elementwise;
using testing::exact;
using testing::Inputs;
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
struct Layout {
  const char* name;
  Shape stored;
  std::function<Tensor(const Tensor&)> view;
};

const std::vector<Layout> layouts = {
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
      for (const Layout& layout : layouts) {
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
