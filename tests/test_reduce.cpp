// The reduce family (sum, mean, var, max, min, argmax, argmin) on each floor, each section below:
//   - the ops (autograd/functions/reduce.cpp): values against NumPy over any dims (the fixture
//     fixtures/broadcast_reduce.json, written by fixtures/generate_broadcast_reduce.py), the
//     same bits on one thread and on two, the precision of a long float32 sum, errors, and
//     float64 gradient checks;
//   - the CPU kernels (backends/cpu/reduce.cpp), called directly through TensorRefs over
//     std::vector buffers: sums over any dims and layouts, max, min and the arg-reductions
//     (NaN, ties), summation accuracy and the same bits for any thread count;
//   - on a GPU, the CUDA kernels (backends/cuda/reduce.cu) against the CPU's, values and
//     gradients;
//   - bfloat16: each backend's kernels are, bit for bit, the float32 reductions on the same
//     values, rounded once.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <numeric>
#include <tuple>
#include <vector>

#include "base/error.h"
#include "bfloat16_twins.h"
#include "broadcast_reduce_fixture.h"
#include "cpu_kernel_buffers.h"
#include "cuda_parity.h"
#include "helpers.h"

using namespace normgrad;
using testing::all_close;
using testing::leaf;
using Inputs = std::vector<Tensor>;

using namespace testing::broadcast_reduce;

TEST_CASE("reductions over any dims match NumPy") {
  const nlohmann::json fixture = load_fixture();
  for (DType dtype : {DType::Float32, DType::Float64}) {
    const double rtol = dtype == DType::Float32 ? 1e-5 : 1e-12;
    for (const auto& c : fixture["reduce"]) {
      CAPTURE(c["shape"].dump());
      CAPTURE(c["dims"].dump());
      const Tensor x = from_json(c["x"], c["shape"], dtype);
      const auto dims = c["dims"].get<std::vector<std::int64_t>>();
      CHECK(x.sum(dims).shape() == c["out_shape"].get<Shape>());
      CHECK(x.sum(dims, true).shape() == c["sum_keepdim_shape"].get<Shape>());
      CHECK(all_close(x.sum(dims), c["sum"].get<std::vector<double>>(), rtol, 1e-6));
      CHECK(all_close(x.mean(dims), c["mean"].get<std::vector<double>>(), rtol, 1e-6));
      CHECK(all_close(x.var(dims), c["var"].get<std::vector<double>>(), rtol, 1e-6));
      CHECK(all_close(x.var(dims, false, true), c["var_unbiased"].get<std::vector<double>>(), rtol,
                      1e-6));
      if (c.contains("max")) {
        const std::int64_t dim = dims.empty() ? 0 : dims[0];
        CHECK(all_close(x.max(dim), c["max"].get<std::vector<double>>()));
        CHECK(x.argmax(dim).to_vector<std::int64_t>() ==
              c["argmax"].get<std::vector<std::int64_t>>());
      }
    }
  }
}

TEST_CASE("reductions give the same bits on one thread and on two") {
  Generator generator(3);
  const Tensor x = randn({300, 5000}, generator);
  const int threads = get_num_threads();
  set_num_threads(1);
  const auto one = std::make_tuple(x.sum().item(), x.sum({0}).to_vector<float>(),
                                   x.sum({1}).to_vector<float>(), x.var({1}).to_vector<float>());
  set_num_threads(2);
  const auto two = std::make_tuple(x.sum().item(), x.sum({0}).to_vector<float>(),
                                   x.sum({1}).to_vector<float>(), x.var({1}).to_vector<float>());
  set_num_threads(threads);
  CHECK(one == two);
}

TEST_CASE("a float32 sum of ten million values keeps its precision") {
  const Tensor x = full({10'000'000}, 0.1);
  CHECK(x.sum().item() == doctest::Approx(1e6).epsilon(1e-6));
  CHECK(x.mean().item() == doctest::Approx(0.1).epsilon(1e-6));
}

TEST_CASE("reductions refuse bad dims with clear errors") {
  const Tensor x = zeros({2, 3});
  CHECK_ERROR(x.sum({2}), "sum", "dim 2", "rank 2");
  CHECK_ERROR(x.sum({1, -1}), "sum", "more than once");
  CHECK_ERROR(x.mean({-3}), "mean", "dim -3");
  CHECK_ERROR(zeros({1, 3}).var({0}, false, true), "var", "at least 2");
  CHECK_ERROR(zeros({0, 3}).max(0), "max", "size 0");
  CHECK_ERROR(x.argmax(5), "argmax", "dim 5");
  CHECK_ERROR(zeros({2}, {.dtype = DType::Int64}).mean(), "mean", "int64");
  CHECK(zeros({0, 3}).sum({0}).to_vector<float>() == std::vector<float>{0, 0, 0});
}

TEST_CASE("gradcheck: reductions") {
  const Tensor a = leaf({3, 4, 2});
  CHECK_GRADIENTS([](const Inputs& x) { return x[0].sum(); }, {a});
  CHECK_GRADIENTS([](const Inputs& x) { return x[0].sum({1}); }, {a});
  CHECK_GRADIENTS([](const Inputs& x) { return x[0].sum({0, 2}, true); }, {a});
  CHECK_GRADIENTS([](const Inputs& x) { return x[0].mean({-1}); }, {a});
  CHECK_GRADIENTS([](const Inputs& x) { return x[0].mean(); }, {a});
  CHECK_GRADIENTS([](const Inputs& x) { return x[0].var({1}); }, {a});
  CHECK_GRADIENTS([](const Inputs& x) { return x[0].var({0, 2}, true, true); }, {a});
  CHECK_GRADIENTS([](const Inputs& x) { return x[0].max(1); }, {a});
  CHECK_GRADIENTS([](const Inputs& x) { return min(x[0], 0, true); }, {a});
  CHECK_GRADIENTS([](const Inputs& x) { return x[0].max(); }, {a});
}

// ---- the CPU kernels ---------------------------------------------------------------------------

using backend::ReduceOp;
using namespace testing::cpu_kernels;

TEST_CASE("cpu reduce sums over any dims and layouts") {
  // x: 2x3x4 with x[i][j][k] = 12 i + 4 j + k.
  std::vector<double> x(24);
  std::iota(x.begin(), x.end(), 0.0);
  std::vector<double> out(12);
  cpu().reduce(ReduceOp::Sum, view(out, {2, 3, 1}), view(x, {2, 3, 4}), 0, 1.0);  // innermost
  CHECK(std::vector<double>(out.begin(), out.begin() + 6) ==
        std::vector<double>{6, 22, 38, 54, 70, 86});
  cpu().reduce(ReduceOp::Sum, view(out, {1, 3, 4}), view(x, {2, 3, 4}), 0,
               0.5);  // outermost, a mean
  CHECK(out == std::vector<double>{6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17});
  cpu().reduce(ReduceOp::Sum, view(out, {2, 1, 4}), view(x, {2, 3, 4}), 0, 1.0);  // middle
  CHECK(std::vector<double>(out.begin(), out.begin() + 8) ==
        std::vector<double>{12, 15, 18, 21, 48, 51, 54, 57});
  cpu().reduce(ReduceOp::Sum, view(out, {1, 3, 1}), view(x, {2, 3, 4}), 0, 1.0);  // two dims
  CHECK(std::vector<double>(out.begin(), out.begin() + 3) == std::vector<double>{60, 92, 124});
  cpu().reduce(ReduceOp::Sum, view(out, {1, 1, 1}), view(x, {2, 3, 4}), 0, 1.0);  // all
  CHECK(out[0] == 276);
  // The input permuted to 4x3x2 (strides 1, 4, 12), reduced over its last dim.
  cpu().reduce(ReduceOp::Sum, view(out, {4, 3, 1}), view(x, {4, 3, 2}, {1, 4, 12}), 0, 1.0);
  CHECK(out == std::vector<double>{12, 20, 28, 14, 22, 30, 16, 24, 32, 18, 26, 34});
  // A size-1 dim named in the mask is reduced (trivially); rank 0 in, rank 0 out.
  std::vector<double> one_row{1, 2, 3}, sums(3);
  cpu().reduce(ReduceOp::Sum, view(sums, {1, 3}), view(one_row, {1, 3}), 0b01, 2.0);
  CHECK(sums == std::vector<double>{2, 4, 6});
  std::vector<double> scalar{5}, scalar_out{0};
  cpu().reduce(ReduceOp::Sum, view(scalar_out, {}), view(scalar, {}), 0, 3.0);
  CHECK(scalar_out[0] == 15);
  // An empty reduced dim sums to 0; int64 sums are exact.
  std::vector<float> none, zero_sums{9, 9};
  cpu().reduce(ReduceOp::Sum, view(zero_sums, {2, 1}), view(none, {2, 0}), 0, 1.0);
  CHECK(zero_sums == std::vector<float>{0, 0});
  std::vector<std::int64_t> integers{5, -3, 7}, integer_sum{0};
  cpu().reduce(ReduceOp::Sum, view(integer_sum, {1}), view(integers, {3}), 0, 1.0);
  CHECK(integer_sum[0] == 9);
}

TEST_CASE("cpu reduce max, min and arg-reductions") {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  std::vector<double> x{3, 1, 3, -2, 7, 7, 0, 0, 5, nan, -1, 2};  // 3x4
  std::vector<double> out(4);
  std::vector<std::int64_t> index(4);
  cpu().reduce(ReduceOp::Max, view(out, {3, 1}), view(x, {3, 4}), 0, 1);
  CHECK(out[0] == 3);
  CHECK(out[1] == 7);
  CHECK(std::isnan(out[2]));  // NaN propagates
  cpu().reduce(ReduceOp::Min, view(out, {1, 4}), view(x, {3, 4}), 0, 1);
  CHECK(out[0] == 3);
  CHECK(std::isnan(out[1]));
  CHECK(out[2] == -1);
  CHECK(out[3] == -2);
  // First index on ties; a NaN counts as the extreme.
  cpu().reduce(ReduceOp::ArgMax, view(index, {3, 1}), view(x, {3, 4}), 0, 1);
  CHECK(std::vector<std::int64_t>(index.begin(), index.begin() + 3) ==
        std::vector<std::int64_t>{0, 0, 1});
  cpu().reduce(ReduceOp::ArgMin, view(index, {3, 1}), view(x, {3, 4}), 0, 1);
  CHECK(std::vector<std::int64_t>(index.begin(), index.begin() + 3) ==
        std::vector<std::int64_t>{3, 2, 1});
  cpu().reduce(ReduceOp::ArgMax, view(index, {1, 4}), view(x, {3, 4}), 0, 1);
  CHECK(index == std::vector<std::int64_t>{1, 2, 0, 2});
  std::vector<std::int64_t> integers{4, 9, 9, 1}, best{0};
  cpu().reduce(ReduceOp::ArgMax, view(best, {1}), view(integers, {4}), 0, 1);
  CHECK(best[0] == 1);
  cpu().reduce(ReduceOp::Max, view(best, {1}), view(integers, {4}), 0, 1);
  CHECK(best[0] == 9);
  CHECK_THROWS_AS(cpu().reduce(ReduceOp::Max, view(out, {2, 1}), view(x, {2, 0}), 0, 1),
                  normgrad::Error);
}

TEST_CASE("cpu reductions are accurate and do not depend on the thread count") {
  // 10^7 copies of 0.1f: a left-to-right float32 sum gives 1087937, 8.8% too high.
  std::vector<float> tenths(10'000'000, 0.1f), total{0};
  cpu().reduce(ReduceOp::Sum, view(total, {1}), view(tenths, {10'000'000}), 0, 1.0);
  const double exact = 1e7 * static_cast<double>(0.1f);
  CHECK(std::fabs(total[0] - exact) / exact < 1e-6);

  // Row plan, column plan, a region that does not merge, and one long row: each bit-identical
  // with 1 and 2 threads, and close to a double-precision naive sum.
  const std::int64_t rows = 1200, cols = 900;
  std::vector<float> x = sample_values<float>(rows * cols, 7);
  struct Case {
    Shape out_shape, in_shape;
    Strides in_strides;
  };
  const Case cases[] = {
      {{rows, 1}, {rows, cols}, {cols, 1}},          // x.sum(1)
      {{1, cols}, {rows, cols}, {cols, 1}},          // x.sum(0)
      {{1, 1}, {rows, cols}, {cols, 1}},             // x.sum()
      {{1, 30, 1}, {40, 30, 450}, {27000, 900, 2}},  // every other column, two dims reduced
      {{cols, 1}, {cols, rows}, {1, cols}},          // x.T.sum(1): the column plan again
      {{1, 10}, {rows, 10}, {cols, 1}},              // too narrow for columns: strided rows
  };
  for (const Case& c : cases) {
    const std::int64_t outputs = numel(c.out_shape);
    std::vector<float> one(outputs), two(outputs);
    with_threads(1, [&] {
      cpu().reduce(ReduceOp::Sum, view(one, c.out_shape), view(x, c.in_shape, c.in_strides), 0,
                   1.0);
    });
    with_threads(2, [&] {
      cpu().reduce(ReduceOp::Sum, view(two, c.out_shape), view(x, c.in_shape, c.in_strides), 0,
                   1.0);
    });
    CHECK(one == two);
    // The naive sum in double, over the same elements.
    std::vector<double> naive(outputs, 0.0);
    const std::int64_t rank = static_cast<std::int64_t>(c.in_shape.size());
    std::vector<std::int64_t> index(rank, 0);
    for (std::int64_t linear = 0; linear < numel(c.in_shape); ++linear) {
      std::int64_t offset = 0, out_index = 0;
      for (std::int64_t d = 0; d < rank; ++d) {
        offset += index[d] * c.in_strides[d];
        out_index = out_index * c.out_shape[d] + (c.out_shape[d] == 1 ? 0 : index[d]);
      }
      naive[out_index] += x[offset];
      for (std::int64_t d = rank - 1; d >= 0 && ++index[d] == c.in_shape[d]; --d) index[d] = 0;
    }
    for (std::int64_t i = 0; i < outputs; ++i)
      CHECK(one[i] == doctest::Approx(naive[i]).epsilon(1e-4));
  }

  std::vector<float> long_row = sample_values<float>(5'000'001, 3), sum_one{0}, sum_two{0},
                     max_one{0}, max_two{0};
  with_threads(1, [&] {
    cpu().reduce(ReduceOp::Sum, view(sum_one, {1}), view(long_row, {5'000'001}), 0, 1.0);
    cpu().reduce(ReduceOp::Max, view(max_one, {1}), view(long_row, {5'000'001}), 0, 1.0);
  });
  with_threads(2, [&] {
    cpu().reduce(ReduceOp::Sum, view(sum_two, {1}), view(long_row, {5'000'001}), 0, 1.0);
    cpu().reduce(ReduceOp::Max, view(max_two, {1}), view(long_row, {5'000'001}), 0, 1.0);
  });
  CHECK(sum_one[0] == sum_two[0]);
  CHECK(max_one[0] == max_two[0]);
  CHECK(max_one[0] == *std::max_element(long_row.begin(), long_row.end()));
}

// ---- on a GPU: CPU against CUDA ----------------------------------------------------------------

// Values and gradients of sum, mean and var over every kind of dim set (one dim, several, all,
// keepdim, strided views) and at 2^20 elements; max, min, argmax and argmin (exact, first index
// on ties).
//
// Tolerances. Sums are added in another order on the GPU, so float values use testing::summed
// (1e-6 sum|terms| in float32, 1e-14 in float64). Where the data are small multiples of 1/2,
// every partial sum of up to 2^20 of them is exact in float32, so any order gives the same
// bits: those cases are exact, and catch a lost or doubled element that a loose tolerance
// could hide. max, min and their indices select values and are exact.

using testing::exact;
using testing::parity_mismatch;
using testing::summed;
using testing::Tolerance;

namespace {

using Dims = std::vector<std::int64_t>;

// Multiples of 1/2 in [-1.5, 1.5]: sums of up to 2^21 of them are exact in float32.
Tensor halves(const Shape& shape, std::uint64_t seed, DType dtype = DType::Float32) {
  Generator generator(seed);
  return randint(-3, 4, shape, generator).to(dtype) / 2.0;
}

// The number of values one output of a reduction over `dims` of `shape` adds.
double reduced_count(const Shape& shape, const Dims& dims) {
  double count = 1;
  if (dims.empty()) {
    for (const std::int64_t size : shape) count *= static_cast<double>(size);
    return count;
  }
  for (std::int64_t dim : dims)
    count *=
        static_cast<double>(shape[dim < 0 ? dim + static_cast<std::int64_t>(shape.size()) : dim]);
  return count;
}

}  // namespace

TEST_CASE("cuda parity: sum, mean and var over dim sets, keepdim and strided views") {
  SKIP_PARITY_WITHOUT_CUDA();
  const Shape shape{6, 33, 17};
  const std::vector<Dims> dim_sets = {{}, {0}, {1}, {2}, {-1}, {0, 2}, {1, 2}, {0, 1, 2}};
  for (const DType dtype : {DType::Float32, DType::Float64}) {
    const Tensor x = testing::normal(shape, 1, dtype);
    for (const Dims& dims : dim_sets) {
      for (const bool keepdim : {false, true}) {
        INFO(dtype << ", dims " << Shape(dims.begin(), dims.end()) << ", keepdim " << keepdim);
        const Tolerance tolerance = summed(dtype, reduced_count(shape, dims));
        CHECK_NO_MISMATCH(parity_mismatch(
            [&](const Inputs& in) { return sum(in[0], dims, keepdim); }, {x}, tolerance));
        CHECK_NO_MISMATCH(parity_mismatch(
            [&](const Inputs& in) { return mean(in[0], dims, keepdim); }, {x}, tolerance));
        // var's backward, 2 (x - mean) / n, depends on the mean, itself a sum.
        CHECK_NO_MISMATCH(parity_mismatch(
            [&](const Inputs& in) { return var(in[0], dims, keepdim, /*unbiased=*/true); }, {x},
            summed(dtype, reduced_count(shape, dims), 4.0)));
      }
    }
    // A permuted view: the reduced dims are strided in memory.
    for (const Dims& dims : std::vector<Dims>{{0}, {2}, {0, 1}}) {
      INFO(dtype << ", permuted, dims " << Shape(dims.begin(), dims.end()));
      CHECK_NO_MISMATCH(parity_mismatch(
          [&](const Inputs& in) {
            return sum(in[0].permute({2, 0, 1}), dims);
          },
          {x}, summed(dtype, reduced_count({17, 6, 33}, dims))));
    }
  }
}

TEST_CASE("cuda parity: sums of exactly representable values are bit-identical, up to 2^20") {
  SKIP_PARITY_WITHOUT_CUDA();
  const Tensor flat = halves({1 << 20}, 2);
  CHECK_NO_MISMATCH(parity_mismatch([](const Inputs& in) { return in[0].sum(); }, {flat}, exact));
  // mean over a power of two: the division is exact too.
  CHECK_NO_MISMATCH(parity_mismatch([](const Inputs& in) { return in[0].mean(); }, {flat}, exact));
  const Tensor square = halves({1024, 1024}, 3);
  for (const std::int64_t dim : {0, 1}) {
    CAPTURE(dim);
    CHECK_NO_MISMATCH(
        parity_mismatch([dim](const Inputs& in) { return in[0].sum({dim}); }, {square}, exact));
    CHECK_NO_MISMATCH(
        parity_mismatch([dim](const Inputs& in) { return in[0].t().sum({dim}); }, {square}, exact));
  }
  // Odd sizes: a partial last block in every direction.
  const Tensor odd = halves({3, 100003}, 4);
  CHECK_NO_MISMATCH(parity_mismatch([](const Inputs& in) { return in[0].sum({1}); }, {odd}, exact));
  CHECK_NO_MISMATCH(parity_mismatch([](const Inputs& in) { return in[0].sum({0}); }, {odd}, exact));
  CHECK_NO_MISMATCH(parity_mismatch([](const Inputs& in) { return in[0].sum(); }, {odd}, exact));
}

TEST_CASE("cuda parity: large reductions of random values, whole and along each dim") {
  SKIP_PARITY_WITHOUT_CUDA();
  for (const DType dtype : {DType::Float32, DType::Float64}) {
    INFO(dtype);
    const Tensor flat = testing::normal({1 << 20}, 5, dtype);
    CHECK_NO_MISMATCH(parity_mismatch([](const Inputs& in) { return in[0].sum(); }, {flat},
                                      summed(dtype, 1 << 20)));
    CHECK_NO_MISMATCH(parity_mismatch([](const Inputs& in) { return in[0].mean(); }, {flat},
                                      summed(dtype, 1, 1.0)));
    const Tensor wide = flat.view({16, 1 << 16});
    CHECK_NO_MISMATCH(parity_mismatch([](const Inputs& in) { return in[0].sum({1}); }, {wide},
                                      summed(dtype, 1 << 16)));
    CHECK_NO_MISMATCH(parity_mismatch([](const Inputs& in) { return in[0].t().sum({1}); },
                                      {flat.view({1 << 16, 16})}, summed(dtype, 1 << 16)));
    CHECK_NO_MISMATCH(parity_mismatch([](const Inputs& in) { return in[0].sum({0}); }, {wide},
                                      summed(dtype, 16)));
  }
}

TEST_CASE("cuda parity: max, min, argmax and argmin are exact, first index on ties") {
  SKIP_PARITY_WITHOUT_CUDA();
  for (const DType dtype : {DType::Float32, DType::Float64}) {
    // Random values (distinct), and small integers (many ties).
    Generator generator(6);
    const Tensor distinct = testing::normal({7, 45, 9}, 6, dtype);
    const Tensor tied = randint(-2, 3, {7, 45, 9}, generator).to(dtype);
    for (const Tensor& x : {distinct, tied}) {
      for (const std::int64_t dim : {0, 1, 2, -1}) {
        for (const bool keepdim : {false, true}) {
          INFO(dtype << ", dim " << dim << ", keepdim " << keepdim);
          CHECK_NO_MISMATCH(parity_mismatch(
              [&](const Inputs& in) { return max(in[0], dim, keepdim); }, {x}, exact));
          CHECK_NO_MISMATCH(parity_mismatch(
              [&](const Inputs& in) { return min(in[0].transpose(0, 2), dim, keepdim); }, {x},
              exact));
          CHECK_NO_MISMATCH(parity_mismatch(
              [&](const Inputs& in) { return argmax(in[0], dim, keepdim); }, {x}, exact));
          CHECK_NO_MISMATCH(parity_mismatch(
              [&](const Inputs& in) { return argmin(in[0].transpose(1, 2), dim, keepdim); }, {x},
              exact));
        }
      }
      INFO(dtype << ", over all elements");
      CHECK_NO_MISMATCH(parity_mismatch([](const Inputs& in) { return max(in[0]); }, {x}, exact));
      CHECK_NO_MISMATCH(parity_mismatch([](const Inputs& in) { return min(in[0]); }, {x}, exact));
    }
  }
  // 2^20 values, one maximum planted near the end and one minimum near the start.
  Tensor big = testing::normal({1 << 20}, 7);
  big.narrow(0, (1 << 20) - 3, 1).fill_(100.0);
  big.narrow(0, 5, 1).fill_(-100.0);
  CHECK_NO_MISMATCH(parity_mismatch(
      [](const Inputs& in) {
        return cat({argmax(in[0], 0, true), argmin(in[0], 0, true),
                    argmax(in[0].view({1024, 1024}), 1), argmin(in[0].view({1024, 1024}), 0)});
      },
      {big}, exact));
  CHECK_NO_MISMATCH(parity_mismatch(
      [](const Inputs& in) {
        return cat({max(in[0]).unsqueeze(0), min(in[0]).unsqueeze(0)});
      },
      {big}, exact));
}

// ---- bfloat16 ----------------------------------------------------------------------------------

// The CPU sums bfloat16 on float32 working copies of its operands, CUDA natively in float32
// (see test_elementwise.cpp's bfloat16 section): on both, the float32 kernel's result on the
// same values, laid out as the kernel reads them, rounded once.

using testing::bits_mismatch;
using namespace testing::twins;

TEST_CASE(
    "bfloat16 kernels: sums, extremes and their indices are the float32 reductions, "
    "rounded") {
  for (const Device device : devices_present()) {
    CAPTURE(device);
    Generator generator(43);
    // Shapes that take each plan: short rows (a thread per output), rows up to 2048 (a warp),
    // long rows split into chunks (a block, then the partials' pass), and sums down the columns
    // of a row-major matrix (the column plan).
    const std::vector<Shape> shapes = {{300, 12}, {64, 700}, {6, 70000}, {2, 3, 5000}};
    for (const Shape& shape : shapes) {
      CAPTURE(shape);
      const Tensor base = to_bfloat16(randn(shape, generator)).to(device);
      for (const bool transposed : {false, true}) {
        CAPTURE(transposed);
        const View view = [&](const Tensor& t) { return transposed ? t.transpose(0, 1) : t; };
        const Operand x = view_of(base, view);
        const std::int64_t rank = static_cast<std::int64_t>(x.stored.shape().size());
        for (std::int64_t dim = 0; dim < rank; ++dim) {
          CAPTURE(dim);
          CHECK_NO_MISMATCH(bits_mismatch(x.stored.sum({dim}), to_bfloat16(x.widened.sum({dim}))));
          CHECK_NO_MISMATCH(
              bits_mismatch(x.stored.mean({dim}), to_bfloat16(x.widened.mean({dim}))));
          CHECK_NO_MISMATCH(bits_mismatch(max(x.stored, dim), to_bfloat16(max(x.widened, dim))));
          CHECK_NO_MISMATCH(bits_mismatch(min(x.stored, dim), to_bfloat16(min(x.widened, dim))));
          CHECK_NO_MISMATCH(bits_mismatch(argmax(x.stored, dim), argmax(x.widened, dim)));
          CHECK_NO_MISMATCH(bits_mismatch(argmin(x.stored, dim), argmin(x.widened, dim)));
        }
        CHECK_NO_MISMATCH(bits_mismatch(x.stored.sum(), to_bfloat16(x.widened.sum())));
      }
    }
  }
}
