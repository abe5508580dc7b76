// Values and errors of matmul, softmax, joining/splitting and indexing.

#include <cmath>

#include "helpers.h"

using namespace normgrad;
using testing::all_close;

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

TEST_CASE("cat, stack, split and chunk") {
  const Tensor a = tensor({{1, 2}, {3, 4}});
  const Tensor b = tensor({{5, 6}});
  CHECK(cat({a, b}).to_vector<float>() == std::vector<float>{1, 2, 3, 4, 5, 6});
  CHECK(cat({a, a.t()}, 1).to_vector<float>() == std::vector<float>{1, 2, 1, 3, 3, 4, 2, 4});
  CHECK(stack({a, a}, 2).shape() == Shape{2, 2, 2});
  const auto pieces = split(arange(5), 2);
  REQUIRE(pieces.size() == 3);
  CHECK(pieces[2].to_vector<float>() == std::vector<float>{4});
  CHECK(split(arange(5), std::vector<std::int64_t>{1, 4})[1].numel() == 4);
  CHECK(chunk(arange(6), 3).size() == 3);
  CHECK(pieces[0].storage() == pieces[1].storage());  // views, not copies
  CHECK_ERROR(cat({a, tensor({1, 2, 3}).unsqueeze(0)}), "cat", "tensor 1", "[1, 3]");
  CHECK_ERROR(cat({}), "cat", "at least one");
  CHECK_ERROR(stack({a, b}), "stack", "tensor 1", "[1, 2]");
  CHECK_ERROR(split(arange(5), std::vector<std::int64_t>{1, 1}), "split", "add up to 2", "size 5");
  CHECK_ERROR(chunk(arange(5), 0), "chunk", "positive");
}

TEST_CASE("split and chunk gather their pieces' gradients in one buffer") {
  const Tensor x = arange(12).to(DType::Float64).view({3, 4}).requires_grad_();
  const std::vector<Tensor> pieces = split(x, std::vector<std::int64_t>{1, 0, 3}, 1);
  REQUIRE(pieces.size() == 3);
  CHECK(pieces[2].storage() == x.storage());  // still views of x
  CHECK(all_close(pieces[2], x.narrow(1, 1, 3), 0, 0));
  // Only the last piece used: the other windows of the gradient are zero, and backward can
  // run twice over the same graph (the buffer is handed on, and a new one made).
  const Tensor y = (pieces[2] * 3).sum();
  y.backward(Tensor(), /*retain_graph=*/true);
  y.backward();
  CHECK(all_close(x.grad(), std::vector<double>{0, 6, 6, 6, 0, 6, 6, 6, 0, 6, 6, 6}, 0, 0));
  // Pieces used twice and in different products: their gradients land in their own windows.
  Tensor(x).zero_grad();
  const std::vector<Tensor> halves = chunk(x, 2, 1);
  ((halves[0] * halves[0]).sum() + (halves[1] * 2).sum() + halves[0].sum()).backward();
  CHECK(all_close(x.grad(), std::vector<double>{1, 3, 2, 2, 9, 11, 2, 2, 17, 19, 2, 2}, 0, 0));
  // Without a gradient to track, plain views.
  CHECK_FALSE(split(x.detach(), 2, 1)[0].requires_grad());
}

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
