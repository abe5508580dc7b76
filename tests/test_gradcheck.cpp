// Every differentiable op against central finite differences in float64.

#include "helpers.h"

using namespace normgrad;
using testing::leaf;
using testing::positive_leaf;
using Inputs = std::vector<Tensor>;

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
