// Every differentiable op against central finite differences in float64.

#include "helpers.h"

using namespace normgrad;
using testing::leaf;
using testing::positive_leaf;
using Inputs = std::vector<Tensor>;

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
