// Every differentiable op against central finite differences in float64.

#include "helpers.h"

using namespace normgrad;
using testing::leaf;
using testing::positive_leaf;
using Inputs = std::vector<Tensor>;

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

TEST_CASE("gradcheck: views") {
  const Tensor a = leaf({2, 3, 4});
  CHECK_GRADIENTS([](const Inputs& x) { return x[0].reshape({6, 4}) * 1.0; }, {a});
  CHECK_GRADIENTS([](const Inputs& x) { return x[0].permute({2, 0, 1}) * 1.0; }, {a});
  CHECK_GRADIENTS([](const Inputs& x) { return x[0].transpose(0, 2).reshape({-1}); }, {a});
  CHECK_GRADIENTS([](const Inputs& x) { return x[0].narrow(2, 1, 2); }, {a});
  CHECK_GRADIENTS([](const Inputs& x) { return x[0].slice(1, 0, 3, 2); }, {a});
  CHECK_GRADIENTS([](const Inputs& x) { return x[0].select(1, -1); }, {a});
  CHECK_GRADIENTS([](const Inputs& x) { return x[0].unsqueeze(1).squeeze(1).flatten(); }, {a});
  CHECK_GRADIENTS([](const Inputs& x) { return x[0].unsqueeze(0).expand({3, 2, 3, 4}); }, {a});
  CHECK_GRADIENTS(
      [](const Inputs& x) {
        return x[0].sum({2}, true).expand({2, 3, 4}) * x[0];
      },
      {a});
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

TEST_CASE("gradcheck itself catches a wrong gradient") {
  // y = 2x, but the 2x term is cut from the graph, so backward reports 0 instead of 2.
  const Tensor a = leaf({3});
  const auto result =
      gradcheck([](const Inputs& x) { return x[0].detach() * 2.0 + x[0] * 0.0; }, {a});
  CHECK_FALSE(result.ok);
  CHECK(result.message.find("input 0") != std::string::npos);
  CHECK_ERROR(gradcheck([](const Inputs& x) { return x[0] * 2.0; },
                        {testing::leaf({2}).to(DType::Float32).detach().requires_grad_()}),
              "gradcheck", "float64");
}
