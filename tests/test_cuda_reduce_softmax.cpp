// CPU-versus-CUDA parity of reductions and softmax, values and gradients: sum, mean and var
// over every kind of dim set (one dim, several, all, keepdim, strided views) and at 2^20
// elements; max, min, argmax and argmin (exact, first index on ties); softmax and log_softmax
// along the last dim and along others.
//
// Tolerances. Sums are added in another order on the GPU, so float values use testing::summed
// (1e-6 sum|terms| in float32, 1e-14 in float64). Where the data are small multiples of 1/2,
// every partial sum of up to 2^20 of them is exact in float32, so any order gives the same
// bits: those cases are exact, and catch a lost or doubled element that a loose tolerance
// could hide. max, min and their indices select values and are exact.

#include <algorithm>
#include <cstdint>
#include <vector>

#include "cuda_parity.h"

using namespace normgrad;
using testing::bits_mismatch;
using testing::exact;
using testing::Inputs;
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

TEST_CASE("cuda parity: softmax and log_softmax along the last dim and along others") {
  SKIP_PARITY_WITHOUT_CUDA();
  for (const DType dtype : {DType::Float32, DType::Float64}) {
    const bool f64 = dtype == DType::Float64;
    // softmax values lie in (0, 1]: a few ulps of exp plus the relative error of the row sum.
    const Tolerance softmax_values = f64 ? Tolerance{1e-12, 1e-14} : Tolerance{1e-5, 1e-7};
    // log_softmax = x - max - log(sum): an absolute error of a few ulps of |x - max| <= 30.
    const Tolerance log_values = f64 ? Tolerance{1e-12, 1e-13} : Tolerance{1e-5, 1e-5};
    // softmax backward, y (dy - s) with s = sum(dy y) a weighted mean of dy: the error of s is
    // a few ulps of max|dy|, and y <= 1 scales it.
    const Tolerance softmax_gradients = f64 ? Tolerance{1e-12, 1e-13} : Tolerance{1e-5, 1e-5};
    for (const Shape& shape : {Shape{4, 6, 7}, Shape{3, 5, 1000}, Shape{2, 1000, 3}}) {
      const Tensor x = testing::normal(shape, 8, dtype, 3.0);
      for (const std::int64_t dim : {-1, 0, 1}) {
        INFO(dtype << ", shape " << shape << ", dim " << dim);
        const std::int64_t n = *std::max_element(shape.begin(), shape.end());  // bounds any row
        // log_softmax backward, dy - exp(y) sum(dy): a plain sum of n upstream values.
        const Tolerance log_gradients = summed(dtype, static_cast<double>(n), 1.0);
        CHECK_NO_MISMATCH(parity_mismatch([dim](const Inputs& in) { return softmax(in[0], dim); },
                                          {x}, softmax_values, softmax_gradients));
        CHECK_NO_MISMATCH(
            parity_mismatch([dim](const Inputs& in) { return log_softmax(in[0], dim); }, {x},
                            log_values, log_gradients));
        // A transposed input: the softmax dim is strided.
        CHECK_NO_MISMATCH(
            parity_mismatch([dim](const Inputs& in) { return in[0].transpose(0, 2).softmax(dim); },
                            {x}, softmax_values, softmax_gradients));
        CHECK_NO_MISMATCH(parity_mismatch(
            [dim](const Inputs& in) { return in[0].transpose(1, 2).log_softmax(dim); }, {x},
            log_values, log_gradients));
      }
    }
    // One long row of 65536 values.
    INFO(dtype << ", one row of 2^16");
    const Tensor row = testing::normal({2, 1 << 16}, 9, dtype, 3.0);
    CHECK_NO_MISMATCH(parity_mismatch([](const Inputs& in) { return softmax(in[0], 1); }, {row},
                                      softmax_values, softmax_gradients));
    CHECK_NO_MISMATCH(parity_mismatch([](const Inputs& in) { return log_softmax(in[0], 1); }, {row},
                                      log_values, summed(dtype, 1 << 16)));
  }
}
