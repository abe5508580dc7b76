// CPU-versus-CUDA parity of indexing and of the fused cross-entropy, values and gradients:
// index_select along each dim with repeated indices (its backward is an index_add that meets
// the same row many times), embedding and nn::Embedding with a padding index, gather and
// scatter_add; cross_entropy with label smoothing, ignore_index and each reduction, on
// contiguous and transposed logits, nll_loss, and a bad target, which is an Error on the GPU
// as on the CPU.
//
// Tolerances: selections and gathers are exact; index_add and scatter_add sum the values that
// meet one position in an order that may differ (testing::summed over the largest repeat
// count); cross-entropy is a log-sum-exp per row, summed over rows for the reductions.

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "cuda_parity.h"

using namespace normgrad;
using testing::exact;
using testing::Inputs;
using testing::normal;
using testing::parity_mismatch;
using testing::summed;
using testing::Tolerance;

namespace {

Tensor indices(std::int64_t low, std::int64_t high, const Shape& shape, std::uint64_t seed) {
  Generator generator(seed);
  return randint(low, high, shape, generator);
}

}  // namespace

TEST_CASE("cuda parity: index_select along each dim with repeated indices, and its backward") {
  SKIP_PARITY_WITHOUT_CUDA();
  for (const DType dtype : {DType::Float32, DType::Float64}) {
    const Tensor x = normal({6, 7, 8}, 1, dtype);
    for (const std::int64_t dim : {0, 1, 2, -1}) {
      INFO(dtype << ", dim " << dim);
      // 40 picks from at most 8 rows: every row is picked about 5 times or more.
      const Tensor index = indices(0, 6, {40}, 2);
      // The backward adds up to 40 upstream values into one row.
      CHECK_NO_MISMATCH(
          parity_mismatch([dim](const Inputs& in) { return index_select(in[0], dim, in[1]); },
                          {x, index}, exact, summed(dtype, 40, 4.0)));
      CHECK_NO_MISMATCH(parity_mismatch(
          [dim](const Inputs& in) { return index_select(in[0].transpose(0, 2), dim, in[1]); },
          {x, index}, exact, summed(dtype, 40, 4.0)));
    }
  }
}

TEST_CASE("cuda parity: embedding with many repeated indices, and nn::Embedding's padding row") {
  SKIP_PARITY_WITHOUT_CUDA();
  for (const DType dtype : {DType::Float32, DType::Float64}) {
    INFO(dtype);
    const Tensor weight = normal({50, 16}, 3, dtype);
    // 600 lookups of 10 rows: each row gathers about 60 upstream rows in backward.
    const Tensor ids = indices(0, 10, {20, 30}, 4);
    CHECK_NO_MISMATCH(parity_mismatch([](const Inputs& in) { return embedding(in[0], in[1]); },
                                      {weight, ids}, exact, summed(dtype, 600, 4.0)));
    nn::Embedding layer(12, 5, {.padding_index = 3, .dtype = dtype});
    const Tensor tokens = indices(0, 12, {7, 9}, 5);
    CHECK_NO_MISMATCH(testing::module_parity_mismatch(
        layer, [&](const Inputs& in) { return layer.forward(in[0]); }, {tokens}, exact,
        summed(dtype, 63, 4.0)));
    // The padding row got no gradient on the GPU either.
    REQUIRE(layer.weight.grad().defined());
    CHECK(layer.weight.grad().select(0, 3).abs().sum().item() == 0.0);
  }
}

TEST_CASE("cuda parity: gather and scatter_add along each dim, with repeated targets") {
  SKIP_PARITY_WITHOUT_CUDA();
  for (const DType dtype : {DType::Float32, DType::Float64}) {
    const Tensor x = normal({5, 6, 7}, 6, dtype);
    for (const std::int64_t dim : {0, 1, 2}) {
      INFO(dtype << ", dim " << dim);
      const std::int64_t size = x.size(dim);
      Shape index_shape{5, 6, 7};
      index_shape[static_cast<std::size_t>(dim)] = 9;  // more picks than positions: repeats
      const Tensor index = indices(0, size, index_shape, 7 + static_cast<std::uint64_t>(dim));
      const Tensor src = normal(index_shape, 8, dtype);
      // gather's backward scatters up to 9 values onto one position.
      CHECK_NO_MISMATCH(
          parity_mismatch([dim](const Inputs& in) { return gather(in[0], dim, in[1]); }, {x, index},
                          exact, summed(dtype, 9, 4.0)));
      // scatter_add's values add up to 9 sources into one position; its gradients are a copy
      // (for x) and a gather (for src).
      CHECK_NO_MISMATCH(
          parity_mismatch([dim](const Inputs& in) { return scatter_add(in[0], dim, in[1], in[2]); },
                          {x, index, src}, summed(dtype, 10, 4.0), exact));
      // A transposed source tensor.
      CHECK_NO_MISMATCH(parity_mismatch(
          [dim](const Inputs& in) {
            return gather(in[0].transpose(0, 1).contiguous().transpose(0, 1), dim, in[1]);
          },
          {x, index}, exact, summed(dtype, 9, 4.0)));
    }
  }
}

TEST_CASE("cuda parity: cross_entropy with label smoothing, ignore_index and each reduction") {
  SKIP_PARITY_WITHOUT_CUDA();
  for (const DType dtype : {DType::Float32, DType::Float64}) {
    const bool f64 = dtype == DType::Float64;
    // Per row: lse - x_t with |x| up to about 15, a few ulps of that; the Mean and Sum
    // reductions add 12 rows.
    const Tolerance values = f64 ? Tolerance{1e-12, 1e-12} : Tolerance{1e-5, 1e-5};
    // dx = dloss (exp(x - lse) - q): an exp and a subtraction per value.
    const Tolerance gradients = f64 ? Tolerance{1e-12, 1e-14} : Tolerance{1e-5, 1e-6};
    for (const std::int64_t classes : {1, 7, 1000}) {
      for (const nn::CrossEntropyOptions options :
           {nn::CrossEntropyOptions{},
            nn::CrossEntropyOptions{.ignore_index = 1, .label_smoothing = 0.1},
            nn::CrossEntropyOptions{.reduction = nn::Reduction::Sum},
            nn::CrossEntropyOptions{.label_smoothing = 0.2, .reduction = nn::Reduction::None}}) {
        INFO(dtype << ", " << classes << " classes, smoothing " << options.label_smoothing
                   << ", ignore_index " << options.ignore_index);
        const Tensor logits = normal({3, 4, classes}, 9, dtype, 3.0);
        Tensor targets = indices(0, classes, {3, 4}, 10);
        targets.narrow(1, 2, 1).fill_(static_cast<double>(options.ignore_index));  // some ignored
        CHECK_NO_MISMATCH(parity_mismatch(
            [options](const Inputs& in) { return nn::cross_entropy(in[0], in[1], options); },
            {logits, targets}, values, gradients));
        // Logits as a transposed view: classes strided.
        CHECK_NO_MISMATCH(parity_mismatch(
            [options](const Inputs& in) {
              return nn::cross_entropy(in[0].transpose(0, 2), in[1], options);
            },
            {normal({classes, 4, 3}, 11, dtype, 3.0), targets}, values, gradients));
        CHECK_NO_MISMATCH(parity_mismatch(
            [options](const Inputs& in) {
              nn::CrossEntropyOptions unsmoothed = options;
              unsmoothed.label_smoothing = 0;
              return nn::nll_loss(in[0].log_softmax(-1), in[1], unsmoothed);
            },
            {logits, targets}, values, summed(dtype, static_cast<double>(classes))));
      }
    }
  }
}

TEST_CASE("cuda parity: cross_entropy refuses a bad target on the GPU as on the CPU") {
  SKIP_PARITY_WITHOUT_CUDA();
  const Device gpu = testing::parity_device();
  const Tensor logits = zeros({3, 4});
  const Tensor targets = tensor({0, 4, 1}, {.dtype = DType::Int64});  // row 1 is out of range
  CHECK_ERROR(nn::cross_entropy(logits, targets), "cross_entropy", "target 4", "row 1");
  CHECK_ERROR(nn::cross_entropy(logits.to(gpu), targets.to(gpu)), "cross_entropy", "target 4",
              "row 1");
  const Tensor negative = tensor({0, 1, -3}, {.dtype = DType::Int64});  // not the ignore_index
  CHECK_ERROR(nn::cross_entropy(logits.to(gpu), negative.to(gpu)), "cross_entropy", "target -3",
              "row 2");
  // The device stays usable after the error.
  const Tensor fine = tensor({0, 3, 1}, {.dtype = DType::Int64});
  CHECK(nn::cross_entropy(logits.to(gpu), fine.to(gpu)).item() == doctest::Approx(std::log(4.0)));
}
