// CPU-versus-CUDA parity of indexing, values and gradients: index_select along each dim with
// repeated indices (its backward is an index_add that meets the same row many times),
// embedding and nn::Embedding with a padding index, gather and scatter_add. (The fused
// cross-entropy's: test_cross_entropy.cpp.)
//
// Tolerances: selections and gathers are exact; index_add and scatter_add sum the values that
// meet one position in an order that may differ (testing::summed over the largest repeat
// count).

#include <cstdint>

#include "cuda_parity.h"

using namespace normgrad;
using testing::exact;
using testing::indices;
using testing::Inputs;
using testing::normal;
using testing::parity_mismatch;
using testing::summed;

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
