// The indexing family (index_select and gather; index_add and scatter_add, which their backward
// passes are; embedding, built on them) on each floor, each section below:
//   - the ops (autograd/functions/indexing.cpp): values, errors that name the op and the
//     offending index, embedding's backward into repeated rows, and float64 gradient checks;
//   - the CPU kernels (backends/cpu/indexing.cpp), called directly through TensorRefs over
//     std::vector buffers: strided indices and inputs, repeated indices added in order, the same
//     bits for any thread count;
//   - on a GPU, the CUDA kernels (backends/cuda/indexing.cu) against the CPU's, values and
//     gradients, nn::Embedding's padding row included (the fused cross-entropy's are in
//     test_cross_entropy.cpp);
//   - bfloat16: the accumulating kernels are the float32 ones, rounded once, and the ops take
//     bfloat16.

#include <cstdint>
#include <vector>

#include "bfloat16_checks.h"
#include "bfloat16_twins.h"
#include "core/tensor_internal.h"
#include "cpu_kernel_buffers.h"
#include "cuda_parity.h"
#include "helpers.h"

using namespace normgrad;
using testing::all_close;
using testing::leaf;
using Inputs = std::vector<Tensor>;

TEST_CASE("index_select, gather, scatter_add and embedding") {
  const Tensor x = tensor({{1, 2, 3}, {4, 5, 6}, {7, 8, 9}});
  const Tensor rows = from_vector<std::int64_t>({2, 0, 2}, {3});
  CHECK(index_select(x, 0, rows).to_vector<float>() ==
        std::vector<float>{7, 8, 9, 1, 2, 3, 7, 8, 9});
  CHECK(index_select(x, 1, rows).to_vector<float>() ==
        std::vector<float>{3, 1, 3, 6, 4, 6, 9, 7, 9});
  const Tensor picks = from_vector<std::int64_t>({2, 0, 1}, {3, 1});
  CHECK(gather(x, 1, picks).to_vector<float>() == std::vector<float>{3, 4, 8});
  const Tensor added = scatter_add(
      zeros({2, 3}), 1, from_vector<std::int64_t>({0, 0, 2, 1}, {2, 2}), tensor({{1, 2}, {3, 4}}));
  CHECK(added.to_vector<float>() == std::vector<float>{3, 0, 0, 0, 4, 3});
  const Tensor table = tensor({{0, 0}, {1, 1}, {2, 2}});
  const Tensor looked_up = embedding(table, from_vector<std::int64_t>({2, 1, 1, 0}, {2, 2}));
  CHECK(looked_up.shape() == Shape{2, 2, 2});
  CHECK(looked_up.to_vector<float>() == std::vector<float>{2, 2, 1, 1, 1, 1, 0, 0});

  CHECK_ERROR(index_select(x, 0, from_vector<std::int64_t>({3}, {1})), "index_select", "index 3",
              "size 3");
  CHECK_ERROR(index_select(x, 0, from_vector<std::int64_t>({-1}, {1})), "index_select", "index -1");
  CHECK_ERROR(index_select(x, 0, tensor({0})), "index_select", "int64", "float32");
  CHECK_ERROR(gather(x, 1, from_vector<std::int64_t>({0}, {1})), "gather", "rank");
  CHECK_ERROR(embedding(table, from_vector<std::int64_t>({5}, {1})), "index_select", "index 5");
  CHECK_ERROR(embedding(zeros({3}), rows), "embedding", "2-d");
}

TEST_CASE("embedding's backward adds into repeated rows") {
  Tensor table = zeros({3, 2}).requires_grad_();
  embedding(table, from_vector<std::int64_t>({1, 1, 2}, {3})).sum().backward();
  CHECK(table.grad().to_vector<float>() == std::vector<float>{0, 0, 2, 2, 1, 1});
}

TEST_CASE("scatter_add refuses mismatched arguments") {
  const Tensor x = zeros({2, 3});
  const Tensor index = from_vector<std::int64_t>({0, 1}, {2, 1});
  CHECK_ERROR(scatter_add(x, 1, index, zeros({2, 1}, {.dtype = DType::Float64})), "scatter_add",
              "float64");
  CHECK_ERROR(scatter_add(x, 1, from_vector<std::int64_t>({0, 1}, {2}), zeros({2})), "scatter_add",
              "same rank");
  CHECK_ERROR(scatter_add(x, 1, from_vector<std::int64_t>({0, 3}, {2, 1}), zeros({2, 1})),
              "scatter_add", "index 3", "size 3");
  CHECK_ERROR(scatter_add(x, 0, from_vector<std::int64_t>({0, 0, 0}, {3, 1}), zeros({2, 1})),
              "scatter_add", "exceeds");
  CHECK_ERROR(scatter_add(x, 1, index.to(DType::Float32), zeros({2, 1})), "scatter_add", "int64");
}

TEST_CASE("gradcheck: indexing") {
  const Tensor a = leaf({4, 3});
  const Tensor index = from_vector<std::int64_t>({2, 0, 2}, {3});  // a repeated index
  const Tensor positions = from_vector<std::int64_t>({0, 2, 1, 1, 0, 0}, {2, 3});
  CHECK_GRADIENTS([index](const Inputs& x) { return index_select(x[0], 0, index); }, {a});
  CHECK_GRADIENTS([index](const Inputs& x) { return index_select(x[0], 1, index); }, {a});
  CHECK_GRADIENTS([positions](const Inputs& x) { return gather(x[0], 0, positions); }, {a});
  CHECK_GRADIENTS([positions](const Inputs& x) { return gather(x[0], 1, positions); }, {a});
  CHECK_GRADIENTS([positions](const Inputs& x) { return scatter_add(x[0], 0, positions, x[1]); },
                  {a, leaf({2, 3}, 9)});
  CHECK_GRADIENTS([positions](const Inputs& x) { return scatter_add(x[0], 1, positions, x[1]); },
                  {a, leaf({2, 4}, 9)});  // src larger than the index: the rest gets no gradient
  const Tensor tokens = from_vector<std::int64_t>({1, 3, 1, 0}, {2, 2});
  CHECK_GRADIENTS([tokens](const Inputs& x) { return embedding(x[0], tokens); }, {a});
}

// ---- the CPU kernels ---------------------------------------------------------------------------

using backend::TensorRef;
using namespace testing::cpu_kernels;

TEST_CASE("cpu index_select and gather") {
  std::vector<float> in{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11};  // 3x4
  std::vector<std::int64_t> index_storage{2, -1, 0, -1, 2};     // a strided index: {2, 0, 2}
  const TensorRef index = view(index_storage, {3}, {2});
  std::vector<float> rows(12);
  cpu().index_select(view(rows, {3, 4}), view(in, {3, 4}), 0, index);
  CHECK(rows == std::vector<float>{8, 9, 10, 11, 0, 1, 2, 3, 8, 9, 10, 11});
  std::vector<float> columns(9);
  cpu().index_select(view(columns, {3, 3}), view(in, {3, 4}), 1, index);
  CHECK(columns == std::vector<float>{2, 0, 2, 6, 4, 6, 10, 8, 10});
  // out[i][j] = in[i][g[i][j]] along dim 1; then along dim 0 of the transposed input.
  std::vector<std::int64_t> g{3, 0, 1, 1, 2, 2};
  std::vector<float> gathered(6);
  cpu().gather(view(gathered, {3, 2}), view(in, {3, 4}), 1, view(g, {3, 2}));
  CHECK(gathered == std::vector<float>{3, 0, 5, 5, 10, 10});
  std::vector<std::int64_t> g0{2, 0, 1};
  cpu().gather(view(gathered, {1, 3}), view(in, {4, 3}, {1, 4}), 0, view(g0, {1, 3}));
  CHECK(std::vector<float>(gathered.begin(), gathered.begin() + 3) == std::vector<float>{2, 4, 9});
}

TEST_CASE("cpu index_add and scatter_add add repeated indices in order, for any thread count") {
  std::vector<double> out(8, 0.0);  // 4x2
  std::vector<std::int64_t> index{1, 3, 1, 1};
  std::vector<double> src{1, 2, 3, 4, 5, 6, 7, 8};  // 4x2
  cpu().index_add(view(out, {4, 2}), 0, view(index, {4}), view(src, {4, 2}));
  CHECK(out == std::vector<double>{0, 0, 13, 16, 0, 0, 3, 4});

  std::vector<double> scattered(6, 0.0);                      // 2x3, along dim 1
  std::vector<std::int64_t> targets{2, 0, 2, 2, 1, 1, 1, 1};  // 2x4
  cpu().scatter_add(view(scattered, {2, 3}), 1, view(targets, {2, 4}), view(src, {2, 4}));
  CHECK(scattered == std::vector<double>{2, 0, 1 + 3 + 4, 0, 5 + 6 + 7 + 8, 0});

  // Large float32 runs with many collisions: bit-identical to the naive in-order loop with
  // 1 and 2 threads (float addition is not associative, so any reordering would show).
  const std::int64_t entries = 20000, width = 64, targets_count = 37;
  std::vector<float> values = sample_values<float>(entries * width, 21);
  std::vector<std::int64_t> positions(entries);
  for (std::int64_t i = 0; i < entries; ++i) positions[i] = (i * 7919) % targets_count;
  std::vector<float> naive(targets_count * width, 0.0f);
  for (std::int64_t i = 0; i < entries; ++i)
    for (std::int64_t j = 0; j < width; ++j)
      naive[positions[i] * width + j] += values[i * width + j];
  for (int threads : {1, 2}) {
    std::vector<float> result(targets_count * width, 0.0f);
    with_threads(threads, [&] {
      cpu().index_add(view(result, {targets_count, width}), 0, view(positions, {entries}),
                      view(values, {entries, width}));
    });
    CHECK(result == naive);
  }
  // The same along dim 0 with scatter_add: index has src's shape, every column the same targets.
  std::vector<std::int64_t> scatter_index(entries * width);
  for (std::int64_t i = 0; i < entries; ++i)
    for (std::int64_t j = 0; j < width; ++j) scatter_index[i * width + j] = positions[i];
  for (int threads : {1, 2}) {
    std::vector<float> result(targets_count * width, 0.0f);
    with_threads(threads, [&] {
      cpu().scatter_add(view(result, {targets_count, width}), 0,
                        view(scatter_index, {entries, width}), view(values, {entries, width}));
    });
    CHECK(result == naive);
  }
}

// ---- on a GPU: CPU against CUDA ----------------------------------------------------------------

// Values and gradients: index_select along each dim with repeated indices (its backward is an
// index_add that meets the same row many times), embedding and nn::Embedding with a padding
// index, gather and scatter_add. Tolerances: selections and gathers are exact; index_add and
// scatter_add sum the values that meet one position in an order that may differ
// (testing::summed over the largest repeat count).

using testing::indices;
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
                          {x, index}, testing::exact, summed(dtype, 40, 4.0)));
      CHECK_NO_MISMATCH(parity_mismatch(
          [dim](const Inputs& in) { return index_select(in[0].transpose(0, 2), dim, in[1]); },
          {x, index}, testing::exact, summed(dtype, 40, 4.0)));
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
                                      {weight, ids}, testing::exact, summed(dtype, 600, 4.0)));
    nn::Embedding layer(12, 5, {.padding_index = 3, .dtype = dtype});
    const Tensor tokens = indices(0, 12, {7, 9}, 5);
    CHECK_NO_MISMATCH(testing::module_parity_mismatch(
        layer, [&](const Inputs& in) { return layer.forward(in[0]); }, {tokens}, testing::exact,
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
                          testing::exact, summed(dtype, 9, 4.0)));
      // scatter_add's values add up to 9 sources into one position; its gradients are a copy
      // (for x) and a gather (for src).
      CHECK_NO_MISMATCH(
          parity_mismatch([dim](const Inputs& in) { return scatter_add(in[0], dim, in[1], in[2]); },
                          {x, index, src}, summed(dtype, 10, 4.0), testing::exact));
      // A transposed source tensor.
      CHECK_NO_MISMATCH(parity_mismatch(
          [dim](const Inputs& in) {
            return gather(in[0].transpose(0, 1).contiguous().transpose(0, 1), dim, in[1]);
          },
          {x, index}, testing::exact, summed(dtype, 9, 4.0)));
    }
  }
}

// ---- bfloat16 ----------------------------------------------------------------------------------

using namespace testing::bfloat16_checks;
using namespace testing::twins;

// The accumulating indexing ops add each target's sources in order in float32 and round once:
// the float32 kernels' sums (which may walk the columns instead of sorting) rounded.
TEST_CASE("bfloat16 kernels: index_add and scatter_add are the float32 kernels, rounded once") {
  for (const Device device : devices_present()) {
    CAPTURE(device);
    Generator generator(52);
    backend::Backend& kernels = backend::backend_for(device);
    // Few targets, so each is hit many times: long runs of repeated indices.
    const Tensor rows = randint(0, 7, {300}, generator).to(device);
    const Twin src = input_twin(device, {5, 300, 9}, generator);
    Twin sums = input_twin(device, {5, 7, 9}, generator);  // added to, so it starts with values
    for (const bool narrow : {true, false})
      kernels.index_add(sums.ref(narrow), 1, detail::ref(rows), src.ref(narrow));
    CHECK_NO_MISMATCH(twin_mismatch(sums, "index_add"));
    // Short columns (walked in place by float32) and long ones (sorted by both).
    for (const std::int64_t length : {40, 400}) {
      CAPTURE(length);
      const Tensor index = randint(0, 6, {8, length}, generator).to(device);
      const Twin values = input_twin(device, {8, length}, generator);
      Twin out = input_twin(device, {8, 6}, generator);
      for (const bool narrow : {true, false})
        kernels.scatter_add(out.ref(narrow), 1, detail::ref(index), values.ref(narrow));
      CHECK_NO_MISMATCH(twin_mismatch(out, "scatter_add"));
    }
  }
}

TEST_CASE("index_select, gather, index_add and scatter_add take bfloat16") {
  Generator generator(15);
  const Tensor x = bf16(randn({5, 4}, generator));
  const Tensor index = tensor({3, 0, 3, 1}, {.dtype = DType::Int64});
  // Selection and gathering move the values unchanged: the float32 result, rounded, is exact.
  const Tensor selected = index_select(x, 0, index);
  CHECK(selected.dtype() == DType::BFloat16);
  CHECK(same_bits(selected, bf16(index_select(f32(x), 0, index))));
  const Tensor positions = tensor({{4, 0, 1, 2}, {0, 3, 3, 1}}, {.dtype = DType::Int64});
  CHECK(same_bits(gather(x, 0, positions), bf16(gather(f32(x), 0, positions))));
  // The accumulating ones sum in float32 and round once: the float32 sums, rounded. An
  // embedding's backward is an index_add (row 3 is picked twice).
  const Tensor dy = bf16(randn({4, 4}, generator));
  const Tensor table = x.detach().requires_grad_(), exact = f32(x).requires_grad_();
  (embedding(table, index) * dy).sum().backward();
  (embedding(exact, index) * f32(dy)).sum().backward();
  CHECK(same_bits(table.grad(), bf16(exact.grad())));
  const Tensor src = bf16(randn({2, 4}, generator));
  CHECK(same_bits(scatter_add(zeros({5, 4}, {.dtype = DType::BFloat16}), 0, positions, src),
                  bf16(scatter_add(zeros({5, 4}), 0, positions, f32(src)))));
  // index_select's gradient goes back through index_add, in the input's dtype.
  const Tensor input = f32(x).requires_grad_();
  index_select(bf16(input), 0, index).to(DType::Float32).sum().backward();
  CHECK(testing::all_close(
      input.grad(), tensor({{1, 1, 1, 1}, {1, 1, 1, 1}, {0, 0, 0, 0}, {2, 2, 2, 2}, {0, 0, 0, 0}}),
      0, 0));
}
