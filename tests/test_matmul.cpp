// The matmul family (matmul and addmm) on each floor, each section below:
//   - the ops (autograd/functions/matmul.cpp): the 2-d, batched, broadcast and vector forms,
//     tiny products (plain loops) and large ones (a GEMM) in every operand layout against
//     float64, addmm against matmul then +, errors, and float64 gradient checks in every shape
//     combination, a transposed operand's gradient in its own layout;
//   - the CPU kernels (backends/cpu/matmul.cpp), called directly through TensorRefs over
//     std::vector buffers: every transpose combination, operands BLAS cannot read (copied
//     first), transposed outputs, broadcast batches, accumulation, empty products, and a stack
//     of small products shared among threads. The hand-tuned float32 GEMM under them
//     (backends/cpu/gemm/) has its own cases in test_sgemm_simd.cpp;
//   - on a GPU, the CUDA kernels (backends/cuda/matmul.cu, cuBLAS) against the CPU's, values
//     and gradients, and the TF32 switch;
//   - bfloat16: a product of bfloat16 operands into float32 keeps the float32 sums.

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "base/error.h"
#include "bfloat16_twins.h"
#include "core/tensor_internal.h"
#include "cpu_kernel_buffers.h"
#include "cuda_parity.h"
#include "helpers.h"

using namespace normgrad;
using testing::all_close;
using testing::leaf;
using Inputs = std::vector<Tensor>;

TEST_CASE("matmul: 2-d, batched, broadcast and vector forms") {
  const Tensor a = tensor({{1, 2, 3}, {4, 5, 6}});
  const Tensor b = tensor({{1, 0}, {0, 1}, {1, 1}});
  CHECK(matmul(a, b).to_vector<float>() == std::vector<float>{4, 5, 10, 11});
  CHECK(matmul(b.t(), a.t()).to_vector<float>() == std::vector<float>{4, 10, 5, 11});
  const Tensor batch = stack({a, a * 2.0});  // [2, 2, 3]
  const Tensor product = matmul(batch, b);   // b broadcasts over the batch
  CHECK(product.shape() == Shape{2, 2, 2});
  CHECK(product.to_vector<float>() == std::vector<float>{4, 5, 10, 11, 8, 10, 20, 22});
  CHECK(matmul(tensor({1, 1, 1}), b).to_vector<float>() == std::vector<float>{2, 2});
  CHECK(matmul(a, tensor({1, 0, -1})).to_vector<float>() == std::vector<float>{-2, -2});
  CHECK(matmul(tensor({1, 2}), tensor({3, 4})).item() == 11);
  CHECK(matmul(zeros({2, 0}), zeros({0, 3})).to_vector<float>() == std::vector<float>(6, 0));
  CHECK(matmul(zeros({4, 1, 2, 3}), zeros({5, 3, 7})).shape() == Shape{4, 5, 2, 7});
}

// Products of fewer than 2^15 multiply-adds run as plain loops, larger ones through a GEMM:
// each path, in every operand layout, against the float64 product; and a tiny product of a
// stack, shared among the threads, against the same product alone.
TEST_CASE("matmul: tiny and large products in every layout against float64") {
  for (const std::int64_t k : {1, 7, 8, 13, 300}) {
    for (const bool transpose_a : {false, true}) {
      for (const bool transpose_b : {false, true}) {
        CAPTURE(k);
        CAPTURE(transpose_a);
        CAPTURE(transpose_b);
        const Tensor a64 = testing::leaf({9, k}, 11).detach();
        const Tensor b64 = testing::leaf({k, 20}, 12).detach();
        const Tensor a32 =
            transpose_a ? a64.t().contiguous().to(DType::Float32).t() : a64.to(DType::Float32);
        const Tensor b32 =
            transpose_b ? b64.t().contiguous().to(DType::Float32).t() : b64.to(DType::Float32);
        CHECK(all_close(matmul(a32, b32).to(DType::Float64), matmul(a64, b64), 1e-5, 1e-5));
      }
    }
  }
  // The same tiny product as one of a stack: the same bits.
  const Tensor a = testing::leaf({4, 3, 13}, 13).detach().to(DType::Float32);
  const Tensor b = testing::leaf({13, 6}, 14).detach().to(DType::Float32);
  const Tensor stacked = matmul(a, b.unsqueeze(0).expand({4, 13, 6}));
  CHECK(stacked.select(0, 2).to_vector<float>() == matmul(a.select(0, 2), b).to_vector<float>());
}

TEST_CASE("addmm: bias + a @ b, the bias broadcast") {
  const Tensor a = tensor({{1, 2, 3}, {4, 5, 6}});
  const Tensor b = tensor({{1, 0}, {0, 1}, {1, 1}});
  CHECK(addmm(tensor({10, 20}), a, b).to_vector<float>() == std::vector<float>{14, 25, 20, 31});
  CHECK(addmm(tensor({1, 2}).reshape({2, 1}), a, b).to_vector<float>() ==
        std::vector<float>{5, 6, 12, 13});
  // Against its composed twin, matmul then +, in a size that takes the GEMM path.
  const Tensor x = testing::leaf({40, 70}, 21).detach().to(DType::Float32);
  const Tensor w = testing::leaf({30, 70}, 22).detach().to(DType::Float32);
  const Tensor bias = testing::leaf({30}, 23).detach().to(DType::Float32);
  CHECK(all_close(addmm(bias, x, w.t()), matmul(x, w.t()) + bias, 1e-5, 1e-5));
  CHECK_ERROR(addmm(tensor({1, 2, 3}), a, b), "addmm", "[3]");
  CHECK_ERROR(addmm(tensor({1, 2}), a, a), "addmm", "inner dimensions", "[2, 3]");
  CHECK_ERROR(addmm(tensor({1, 2}), a.unsqueeze(0), b), "addmm", "two matrices");
}

TEST_CASE("matmul errors name the shapes") {
  CHECK_ERROR(matmul(zeros({2, 3}), zeros({4, 2})), "matmul", "[2, 3]", "[4, 2]");
  CHECK_ERROR(matmul(zeros({2, 2, 3}), zeros({3, 3, 2})), "matmul", "cannot be broadcast");
  CHECK_ERROR(matmul(scalar_tensor(1), zeros({2})), "matmul", "at least one dim");
  CHECK_ERROR(
      matmul(zeros({2, 2}, {.dtype = DType::Int64}), zeros({2, 2}, {.dtype = DType::Int64})),
      "matmul", "int64");
}

TEST_CASE("gradcheck: matmul in every shape combination") {
  CHECK_GRADIENTS([](const Inputs& x) { return matmul(x[0], x[1]); },
                  {leaf({3, 4}, 1), leaf({4, 2}, 2)});
  CHECK_GRADIENTS([](const Inputs& x) { return matmul(x[0], x[1]); },
                  {leaf({2, 3, 4}, 1), leaf({2, 4, 5}, 2)});
  CHECK_GRADIENTS([](const Inputs& x) { return matmul(x[0], x[1]); },
                  {leaf({2, 1, 3, 4}, 1), leaf({3, 4, 2}, 2)});
  CHECK_GRADIENTS([](const Inputs& x) { return matmul(x[0], x[1]); },
                  {leaf({4}, 1), leaf({4, 3}, 2)});
  CHECK_GRADIENTS([](const Inputs& x) { return matmul(x[0], x[1]); },
                  {leaf({2, 4}, 1), leaf({4}, 2)});
  CHECK_GRADIENTS([](const Inputs& x) { return matmul(x[0], x[1]); }, {leaf({4}, 1), leaf({4}, 2)});
  // A stack times one matrix or vector is folded into one product of all rows; a stack that
  // is not contiguous is not.
  CHECK_GRADIENTS([](const Inputs& x) { return matmul(x[0], x[1]); },
                  {leaf({2, 3, 4}, 1), leaf({4, 5}, 2)});
  CHECK_GRADIENTS([](const Inputs& x) { return matmul(x[0], x[1]); },
                  {leaf({2, 2, 3, 4}, 1), leaf({4}, 2)});
  CHECK_GRADIENTS([](const Inputs& x) { return matmul(x[0].transpose(1, 2), x[1]); },
                  {leaf({2, 4, 3}, 1), leaf({4, 5}, 2)});
  // Transposed operands go to the GEMM with its transpose flags.
  CHECK_GRADIENTS([](const Inputs& x) { return matmul(x[0].t(), x[1].t()); },
                  {leaf({4, 3}, 1), leaf({2, 4}, 2)});
  // A transposed operand gets its gradient in its own layout; a stack of them, broadcast
  // against a stack of the other operand, has it summed over the stack first.
  CHECK_GRADIENTS([](const Inputs& x) { return matmul(x[0], x[1].transpose(1, 2)); },
                  {leaf({2, 3, 4}, 1), leaf({2, 5, 4}, 2)});
  CHECK_GRADIENTS([](const Inputs& x) { return matmul(x[0], x[1].t()); },
                  {leaf({3, 2, 4}, 1), leaf({5, 4}, 2)});
  CHECK_GRADIENTS([](const Inputs& x) { return matmul(x[0].t(), x[1]); },
                  {leaf({4, 3}, 1), leaf({2, 4, 5}, 2)});
}

TEST_CASE("gradcheck: addmm with a row, a column and a full bias") {
  const Tensor a = leaf({3, 4}, 1), w = leaf({5, 4}, 2);
  for (const Shape& bias_shape : {Shape{5}, Shape{3, 1}, Shape{3, 5}}) {
    CAPTURE(bias_shape);
    CHECK_GRADIENTS([](const Inputs& x) { return addmm(x[0], x[1], x[2].t()); },
                    {leaf(bias_shape, 3), a, w});
  }
  CHECK_GRADIENTS([](const Inputs& x) { return addmm(x[0], x[1].t(), x[2]); },
                  {leaf({5}, 4), leaf({4, 3}, 5), leaf({4, 5}, 6)});
}

// Linear multiplies by weight.t(): the gradient MatmulBackward hands to that view must be
// the transpose of a row-major matrix, so that the weight receives it row-major, as the GEMM
// can write it directly, not as a matrix that every later sum reads column by column.
TEST_CASE("matmul: a transposed operand's gradient comes back in its layout") {
  const Tensor weight = leaf({5, 4}, 3);
  const Tensor input = leaf({3, 4}, 4);
  const Tensor product = matmul(input, weight.t());
  const Tensor dy = leaf({3, 5}, 5).detach();
  const std::vector<Tensor> grads = product.grad_fn()->apply(dy);
  REQUIRE(grads.size() == 2);
  CHECK(grads[0].is_contiguous());
  CHECK(grads[1].shape() == Shape{4, 5});
  CHECK(grads[1].transpose(0, 1).is_contiguous());
  CHECK(testing::all_close(grads[1], matmul(input.detach().t(), dy)));
  CHECK(testing::all_close(grads[0], matmul(dy, weight.detach())));
}

// ---- the CPU kernels ---------------------------------------------------------------------------

using backend::TensorRef;
using namespace testing::cpu_kernels;

namespace {

// out[b][i][j] = sum_k a(b, i, k) b(b, k, j), reading a and b through arbitrary element maps.
template <typename A, typename B>
std::vector<double> naive_matmul(std::int64_t batches, std::int64_t m, std::int64_t n,
                                 std::int64_t k, A a, B b) {
  std::vector<double> out(batches * m * n, 0.0);
  for (std::int64_t batch = 0; batch < batches; ++batch)
    for (std::int64_t i = 0; i < m; ++i)
      for (std::int64_t j = 0; j < n; ++j)
        for (std::int64_t p = 0; p < k; ++p)
          out[(batch * m + i) * n + j] += a(batch, i, p) * b(batch, p, j);
  return out;
}

}  // namespace

TEST_CASE("cpu matmul: a stack of small products, shared among threads, has each product's bits") {
  // 48 products of two rows of weights [2, 37] with a [37, 70] matrix, as attention makes
  // them; the output is transposed in each product (written through scratch), so that each
  // thread needs scratch of its own.
  const std::int64_t batches = 48, m = 2, k = 37, n = 70;
  std::vector<float> a = sample_values<float>(batches * m * k, 11),
                     b = sample_values<float>(batches * k * n, 12);
  std::vector<float> stacked(batches * m * n, 0.5f);
  cpu().matmul(view(stacked, {batches, m, n}, {m * n, 1, m}), view(a, {batches, m, k}),
               view(b, {batches, k, n}), true);
  for (std::int64_t batch = 0; batch < batches; ++batch) {
    std::vector<float> alone(m * n, 0.5f);
    std::vector<float> a_one(a.begin() + batch * m * k, a.begin() + (batch + 1) * m * k),
        b_one(b.begin() + batch * k * n, b.begin() + (batch + 1) * k * n);
    cpu().matmul(view(alone, {m, n}, {1, m}), view(a_one, {m, k}), view(b_one, {k, n}), true);
    for (std::int64_t j = 0; j < m * n; ++j) {
      INFO("product " << batch << ", element " << j);
      CHECK(stacked[batch * m * n + j] == alone[j]);
    }
  }
}

TEST_CASE("cpu matmul: all transpose combinations, copies, batch broadcast, accumulate") {
  const std::int64_t m = 5, n = 7, k = 6;
  std::vector<float> a_data = sample_values<float>(m * k, 1),
                     b_data = sample_values<float>(k * n, 2);
  // a(i, p) and b(p, j), stored row-major; their transposes stored row-major as well.
  std::vector<float> a_transposed(m * k), b_transposed(k * n);
  for (std::int64_t i = 0; i < m; ++i)
    for (std::int64_t p = 0; p < k; ++p) a_transposed[p * m + i] = a_data[i * k + p];
  for (std::int64_t p = 0; p < k; ++p)
    for (std::int64_t j = 0; j < n; ++j) b_transposed[j * k + p] = b_data[p * n + j];
  const auto expected = naive_matmul(
      1, m, n, k, [&](auto, auto i, auto p) { return double(a_data[i * k + p]); },
      [&](auto, auto p, auto j) { return double(b_data[p * n + j]); });
  for (bool transpose_a : {false, true})
    for (bool transpose_b : {false, true}) {
      const TensorRef a = transpose_a ? view(a_transposed, {m, k}, {1, m}) : view(a_data, {m, k});
      const TensorRef b = transpose_b ? view(b_transposed, {k, n}, {1, k}) : view(b_data, {k, n});
      std::vector<float> out(m * n);
      cpu().matmul(view(out, {m, n}), a, b, false);
      for (std::int64_t i = 0; i < m * n; ++i)
        CHECK(out[i] == doctest::Approx(expected[i]).epsilon(1e-5));
    }

  // a sliced with a column stride of 2 (BLAS cannot read it: copied first), accumulating into ones.
  std::vector<double> wide = sample_values<double>(m * 2 * k, 3),
                      b64 = sample_values<double>(k * n, 4);
  std::vector<double> out64(m * n, 1.0);
  cpu().matmul(view(out64, {m, n}), view(wide, {m, k}, {2 * k, 2}), view(b64, {k, n}), true);
  const auto expected64 = naive_matmul(
      1, m, n, k, [&](auto, auto i, auto p) { return wide[i * 2 * k + p * 2]; },
      [&](auto, auto p, auto j) { return b64[p * n + j]; });
  for (std::int64_t i = 0; i < m * n; ++i)
    CHECK(out64[i] == doctest::Approx(1.0 + expected64[i]).epsilon(1e-12));

  // A transposed output (BLAS writes row-major only: computed in scratch, copied back).
  std::vector<double> out_transposed(m * n, 2.0);
  cpu().matmul(view(out_transposed, {m, n}, {1, m}), view(wide, {m, k}, {2 * k, 2}),
               view(b64, {k, n}), true);
  for (std::int64_t i = 0; i < m; ++i)
    for (std::int64_t j = 0; j < n; ++j)
      CHECK(out_transposed[j * m + i] ==
            doctest::Approx(2.0 + expected64[i * n + j]).epsilon(1e-12));

  // Batches: a is 3 x m x k, b one k x n matrix broadcast over the batch (stride 0), and a
  // 2 x 3 batch grid where a broadcasts over the first batch dim.
  std::vector<double> a_batch = sample_values<double>(3 * m * k, 5), out_batch(2 * 3 * m * n);
  cpu().matmul(view(out_batch, {2, 3, m, n}), view(a_batch, {2, 3, m, k}, {0, m * k, k, 1}),
               view(b64, {2, 3, k, n}, {0, 0, n, 1}), false);
  const auto expected_batch = naive_matmul(
      6, m, n, k,
      [&](auto batch, auto i, auto p) { return a_batch[(batch % 3) * m * k + i * k + p]; },
      [&](auto, auto p, auto j) { return b64[p * n + j]; });
  for (std::size_t i = 0; i < out_batch.size(); ++i)
    CHECK(out_batch[i] == doctest::Approx(expected_batch[i]).epsilon(1e-12));

  // k = 0 gives zeros (or leaves out alone when accumulating); m = 0 does nothing.
  std::vector<float> empty, zeros_out(m * n, 3.0f);
  cpu().matmul(view(zeros_out, {m, n}), view(empty, {m, 0}), view(empty, {0, n}), true);
  CHECK(zeros_out == std::vector<float>(m * n, 3.0f));
  cpu().matmul(view(zeros_out, {m, n}), view(empty, {m, 0}), view(empty, {0, n}), false);
  CHECK(zeros_out == std::vector<float>(m * n, 0.0f));
  cpu().matmul(view(empty, {0, n}), view(empty, {0, k}), view(b_data, {k, n}), false);
  std::vector<std::int64_t> integers(4);
  CHECK_THROWS_AS(
      cpu().matmul(view(integers, {2, 2}), view(integers, {2, 2}), view(integers, {2, 2}), false),
      normgrad::Error);
}

// ---- on a GPU: CPU against CUDA ----------------------------------------------------------------

// Values and gradients: 2-d products, transposed and sliced views (which a GEMM reads as
// transposes or which are copied first), batched products, broadcast batch dims (whose
// gradients sum over the broadcast), vector operands, sizes that are not multiples of any tile,
// and the TF32 switch. The accumulating product (out += a @ b) is reached through conv2d's
// weight gradient, in test_conv.cpp.
//
// Tolerance: testing::summed with the inner dimension k as the number of terms (N(0, 1)
// operands, |a_i b_i| below 1 on average); a gradient's inner dimension is the output's
// other dim, or the batch for broadcast operands, and the tolerance takes the largest.
// TF32 is off by default, so cuBLAS must not round the operands to 10-bit mantissas.

using testing::Function;
using testing::normal;
using testing::parity_mismatch;
using testing::summed;
using testing::Tolerance;

namespace {

struct MatmulCase {
  const char* name;
  Shape a, b;
  Function op;
  double inner;  // the longest sum a value or a gradient adds
};

const std::vector<MatmulCase> cases = {
    {"2-d", {17, 33}, {33, 9}, [](const Inputs& in) { return matmul(in[0], in[1]); }, 33},
    {"a transposed",
     {33, 17},
     {33, 9},
     [](const Inputs& in) { return matmul(in[0].t(), in[1]); },
     33},
    {"b transposed",
     {17, 33},
     {9, 33},
     [](const Inputs& in) { return matmul(in[0], in[1].t()); },
     33},
    {"both transposed",
     {33, 17},
     {9, 33},
     [](const Inputs& in) { return matmul(in[0].t(), in[1].t()); },
     33},
    {"sliced columns",
     {17, 66},
     {33, 9},
     [](const Inputs& in) { return matmul(in[0].slice(1, 0, 66, 2), in[1]); },
     33},
    {"batched", {4, 17, 33}, {4, 33, 9}, [](const Inputs& in) { return matmul(in[0], in[1]); }, 33},
    {"batched, transposed b",
     {4, 17, 33},
     {4, 9, 33},
     [](const Inputs& in) { return matmul(in[0], in[1].transpose(1, 2)); },
     33},
    {"batch from a permute",
     {17, 4, 33},
     {4, 33, 9},
     [](const Inputs& in) {
       return matmul(in[0].permute({1, 0, 2}), in[1]);
     },
     33},
    {"broadcast batch",
     {3, 1, 5, 8},
     {2, 8, 6},
     [](const Inputs& in) { return matmul(in[0], in[1]); },
     8 * 6},
    {"matrix times shared matrix",
     {5, 7, 16},
     {16, 3},
     [](const Inputs& in) { return matmul(in[0], in[1]); },
     35},
    {"vector times matrix",
     {40},
     {40, 7},
     [](const Inputs& in) { return matmul(in[0], in[1]); },
     40},
    {"matrix times vector",
     {7, 40},
     {40},
     [](const Inputs& in) { return matmul(in[0], in[1]); },
     40},
    {"vector dot vector", {300}, {300}, [](const Inputs& in) { return matmul(in[0], in[1]); }, 300},
    {"large, odd sizes",
     {129, 257},
     {257, 130},
     [](const Inputs& in) { return matmul(in[0], in[1]); },
     257},
};

}  // namespace

TEST_CASE("cuda parity: matmul in every layout, values and gradients") {
  SKIP_PARITY_WITHOUT_CUDA();
  for (const DType dtype : {DType::Float32, DType::Float64}) {
    for (const MatmulCase& c : cases) {
      INFO(c.name << ", " << dtype);
      CHECK_NO_MISMATCH(parity_mismatch(c.op, {normal(c.a, 1, dtype), normal(c.b, 2, dtype)},
                                        summed(dtype, c.inner),
                                        summed(dtype, std::max(c.inner, 130.0))));
    }
  }
}

TEST_CASE("cuda parity: matmul with an empty inner dimension gives zeros") {
  SKIP_PARITY_WITHOUT_CUDA();
  CHECK_NO_MISMATCH(parity_mismatch([](const Inputs& in) { return matmul(in[0], in[1]); },
                                    {normal({3, 0}, 1), normal({0, 4}, 2)}, testing::exact));
}

TEST_CASE("cuda parity: with TF32 allowed, float32 matmul stays within TF32 rounding") {
  SKIP_PARITY_WITHOUT_CUDA();
  // TF32 keeps 10 of float32's 23 mantissa bits in the products (relative 2^-11 = 4.9e-4 per
  // operand): a dot product of k = 256 N(0, 1) terms is then off by about 1e-3 sum|a_i b_i|.
  cuda::set_allow_tf32(true);
  const std::string found =
      parity_mismatch([](const Inputs& in) { return matmul(in[0], in[1]); },
                      {normal({64, 256}, 3), normal({256, 64}, 4)}, Tolerance{1e-2, 2e-3 * 256},
                      Tolerance{1e-2, 2e-3 * 256});
  cuda::set_allow_tf32(false);
  CHECK_NO_MISMATCH(found);
  CHECK_FALSE(cuda::allow_tf32());
}

// ---- bfloat16 ----------------------------------------------------------------------------------

using namespace testing::twins;

// The convolution by columns keeps cuBLAS's float32 sums of bfloat16 columns: a product of
// bfloat16 operands into a float32 out, plain and accumulating. cuBLAS adds on the tensor cores
// in its own order, so against the float32 product of the same values the bound is the sums'
// (cuda_parity.h), and the values must not have been rounded to bfloat16 on the way.
TEST_CASE("bfloat16 kernels: a product of bfloat16 operands into float32 keeps the float32 sums") {
  for (const Device device : devices_present()) {
    CAPTURE(device);
    Generator generator(48);
    backend::Backend& kernels = backend::backend_for(device);
    const std::int64_t m = 33, k = 300, n = 70;
    const Twin a = input_twin(device, {m, k}, generator), b = input_twin(device, {k, n}, generator);
    const Tensor start = randn({m, n}, generator).to(device);
    for (const bool accumulate : {false, true}) {
      CAPTURE(accumulate);
      Tensor sums[2] = {start.clone(), start.clone()};  // from bfloat16 and from float32 operands
      for (const bool narrow : {true, false})
        kernels.matmul(detail::ref(sums[narrow ? 0 : 1]), a.ref(narrow), b.ref(narrow), accumulate);
      CHECK(sums[0].dtype() == DType::Float32);
      const testing::Tolerance bound = testing::summed(DType::Float32, double(k), 16.0);
      CHECK_NO_MISMATCH(testing::mismatch(sums[1], sums[0], bound));
      // float32 values that bfloat16 cannot hold: the sums were not rounded.
      CHECK((sums[0] - to_float32(to_bfloat16(sums[0]))).abs().max().item() > 0);
    }
  }
}
