// The join family (cat and stack; split, chunk and unbind, whose pieces are views sharing one
// backward buffer) on each floor, each section below:
//   - the ops (autograd/functions/join.cpp): values, views rather than copies, errors, the
//     pieces' gradients gathered in one buffer, and float64 gradient checks, which check the
//     copies family's contiguous(), clone() and to(dtype) in the same case;
//   - on a GPU, the same ops against the CPU's, values and gradients. Joining moves values with
//     the copies family's kernels (test_copies.cpp) and has none of its own.

#include <vector>

#include "cuda_parity.h"
#include "helpers.h"

using namespace normgrad;
using testing::all_close;
using testing::leaf;
using Inputs = std::vector<Tensor>;

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

TEST_CASE("gradcheck: joining, splitting and conversions") {
  const Tensor a = leaf({2, 3}, 1), b = leaf({2, 2}, 2), c = leaf({2, 3}, 3);
  CHECK_GRADIENTS([](const Inputs& x) { return cat({x[0], x[1]}, 1); }, {a, b});
  CHECK_GRADIENTS([](const Inputs& x) { return stack({x[0], x[1]}, 1); }, {a, c});
  CHECK_GRADIENTS(
      [](const Inputs& x) {
        auto pieces = split(x[0], 2, 1);
        return pieces[0].sum({1}) * pieces[1].sum({1});
      },
      {a});
  CHECK_GRADIENTS([](const Inputs& x) { return chunk(x[0], 2, 0)[1] * 3.0; }, {a});
  CHECK_GRADIENTS([](const Inputs& x) { return x[0].t().contiguous(); }, {a});
  CHECK_GRADIENTS([](const Inputs& x) { return x[0].clone(); }, {a});
  CHECK_GRADIENTS([](const Inputs& x) { return x[0].to(DType::Float32).to(DType::Float64); }, {a},
                  GradcheckOptions{.eps = 1e-3, .atol = 1e-4, .rtol = 1e-3});
}

// ---- on a GPU: CPU against CUDA ----------------------------------------------------------------

// cat, stack, split, chunk and unbind move values without rounding them: exact; their
// gradients add a few exact products per element.

using testing::exact;
using testing::parity_mismatch;

TEST_CASE("cuda parity: cat, stack, split, chunk and unbind with their gradients") {
  SKIP_PARITY_WITHOUT_CUDA();
  for (const DType dtype : {DType::Float32, DType::Float64}) {
    INFO(dtype);
    const auto f = [](const Inputs& in) {
      const Tensor joined = cat({in[0], in[1].t(), in[0].slice(0, 1, 3)}, 0);     // [10, 5]
      const Tensor stacked = stack({in[0].select(0, 0), in[1].select(1, 2)}, 1);  // [5, 2]
      const std::vector<Tensor> pieces = split(joined, 4, 0);
      const std::vector<Tensor> chunks = chunk(in[1], 3, 1);
      const std::vector<Tensor> rows = unbind(in[0], 0);
      return cat({joined.flatten(), stacked.flatten() * 2.0, pieces[2].flatten() * 3.0,
                  chunks[1].flatten() * -1.0, (rows[1] * rows[3]).flatten()});
    };
    // Gradients add a few exact products per element: the summed tolerance with 4 terms.
    CHECK_NO_MISMATCH(
        parity_mismatch(f, {testing::normal({4, 5}, 8, dtype), testing::normal({5, 4}, 9, dtype)},
                        exact, testing::summed(dtype, 4, 8.0)));
  }
}
