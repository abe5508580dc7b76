// Determinism on the GPU: the same inputs give bit-identical results in two runs, for the
// passes whose sums are spread over many threads and could be combined in whatever order they
// finish (atomics): the norms' dx, dgain and dbias (LayerNorm, RMSNorm, BatchNorm) over many
// rows, index_add through index_select's and embedding's backward with many repeated indices,
// scatter_add, conv2d's weight gradient and max-pooling's backward with overlapping windows.
// Sizes are chosen so that one sum spans many thread blocks.

#include <cstdint>
#include <optional>
#include <string>

#include "cuda_parity.h"

using namespace normgrad;
using testing::evaluate;
using testing::evaluations_bits_mismatch;
using testing::Function;
using testing::Inputs;
using testing::normal;
using testing::parity_device;

namespace {

// "" when two runs of `function` on the GPU agree bit for bit, gradients included.
std::string rerun_mismatch(const Function& function, const Inputs& inputs) {
  const testing::Evaluation first = evaluate(function, inputs, parity_device());
  const testing::Evaluation second = evaluate(function, inputs, parity_device());
  return evaluations_bits_mismatch(first, second);
}

const Tensor none;

}  // namespace

TEST_CASE("cuda determinism: LayerNorm and RMSNorm gradients are bit-identical across runs") {
  SKIP_PARITY_WITHOUT_CUDA();
  for (const DType dtype : {DType::Float32, DType::Float64}) {
    // 8192 rows of 512: dgain and dbias each sum 8192 values per feature.
    const Inputs inputs{normal({8192, 512}, 1, dtype, 3.0), normal({512}, 2, dtype),
                        normal({512}, 3, dtype)};
    INFO(dtype);
    CHECK_NO_MISMATCH(rerun_mismatch(
        [](const Inputs& in) { return layer_norm(in[0], 1, in[1], in[2]); }, inputs));
    CHECK_NO_MISMATCH(rerun_mismatch(
        [](const Inputs& in) { return rms_norm(in[0], 1, in[1], in[2]); }, inputs));
    CHECK_NO_MISMATCH(rerun_mismatch(
        [](const Inputs& in) { return partial_rms_norm(in[0], 1, 32, in[1], none); }, inputs));
    // The spatial form: per-channel dgain over 64 samples x 32 x 32 positions.
    CHECK_NO_MISMATCH(rerun_mismatch(
        [](const Inputs& in) {
          return rms_norm(in[0], 2, in[1], in[2], {.per_channel = true});
        },
        {normal({64, 8, 32, 32}, 4, dtype), normal({8}, 5, dtype), normal({8}, 6, dtype)}));
  }
}

TEST_CASE("cuda determinism: BatchNorm gradients are bit-identical across runs") {
  SKIP_PARITY_WITHOUT_CUDA();
  for (const DType dtype : {DType::Float32, DType::Float64}) {
    INFO(dtype);
    // 65536 values per channel.
    const Inputs inputs{normal({64, 16, 32, 32}, 7, dtype, 2.0), normal({16}, 8, dtype),
                        normal({16}, 9, dtype)};
    CHECK_NO_MISMATCH(rerun_mismatch(
        [](const Inputs& in) { return batch_norm(in[0], in[1], in[2], none, none, true); },
        inputs));
    CHECK_NO_MISMATCH(rerun_mismatch(
        [](const Inputs& in) {
          return batch_norm(in[0].flatten(2).transpose(1, 2).reshape({-1, 16}), in[1], in[2],
                                none, none, true);
        },
        inputs));
  }
}

TEST_CASE("cuda determinism: index_add and embedding gradients with many repeated indices") {
  SKIP_PARITY_WITHOUT_CUDA();
  for (const DType dtype : {DType::Float32, DType::Float64}) {
    INFO(dtype);
    Generator generator(10);
    // 2^17 lookups of 16 rows: each row's gradient adds about 8192 upstream rows.
    const Tensor ids = randint(0, 16, {256, 512}, generator);
    const Tensor weight = normal({1000, 64}, 11, dtype);
    CHECK_NO_MISMATCH(
        rerun_mismatch([](const Inputs& in) { return embedding(in[0], in[1]); }, {weight, ids}));
    nn::Embedding layer(1000, 64, {.padding_index = std::nullopt, .dtype = dtype});
    layer.to(parity_device());
    CHECK_NO_MISMATCH(rerun_mismatch(
        [&](const Inputs& in) {
          layer.zero_grad();
          const Tensor y = layer.forward(in[0]);
          y.backward(testing::on_device_of(normal(y.shape(), 12, dtype), y));
          return layer.weight.grad().detach();
        },
        {ids}));
    // index_select along a middle dim, 50000 picks of 7 slices.
    const Tensor picks = randint(0, 7, {50000}, generator);
    CHECK_NO_MISMATCH(rerun_mismatch([](const Inputs& in) { return index_select(in[0], 1, in[1]); },
                                     {normal({3, 7, 5}, 13, dtype), picks}));
    // scatter_add with 20000 sources landing on 5 positions per row.
    const Tensor targets = randint(0, 5, {4, 20000}, generator);
    CHECK_NO_MISMATCH(
        rerun_mismatch([](const Inputs& in) { return scatter_add(in[0], 1, in[1], in[2]); },
                       {normal({4, 5}, 14, dtype), targets, normal({4, 20000}, 15, dtype)}));
  }
}

TEST_CASE("cuda determinism: conv2d and max-pooling gradients are bit-identical across runs") {
  SKIP_PARITY_WITHOUT_CUDA();
  CHECK_NO_MISMATCH(
      rerun_mismatch([](const Inputs& in) { return conv2d(in[0], in[1], in[2], 1, 1); },
                     {normal({64, 16, 32, 32}, 16), normal({8, 16, 3, 3}, 17, DType::Float32, 0.2),
                      normal({8}, 18)}));
  // Overlapping windows: one pixel wins in several of them, and its gradient adds theirs.
  CHECK_NO_MISMATCH(
      rerun_mismatch([](const Inputs& in) { return max_pool2d(in[0], 3, Size2d(1), 1); },
                     {normal({16, 8, 64, 64}, 19)}));
}
