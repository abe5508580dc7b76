// Values and errors of matmul, softmax, joining/splitting and indexing.

#include <cmath>

#include "helpers.h"

using namespace normgrad;
using testing::all_close;

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
