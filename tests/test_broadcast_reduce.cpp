// Broadcasting and reductions against golden values computed independently with NumPy
// (fixtures/generate_broadcast_reduce.py writes fixtures/broadcast_reduce.json).

#include <fstream>
#include <nlohmann/json.hpp>
#include <tuple>

#include "broadcast_reduce_fixture.h"
#include "helpers.h"

using namespace normgrad;
using testing::all_close;

using namespace testing::broadcast_reduce;

TEST_CASE("reductions over any dims match NumPy") {
  const nlohmann::json fixture = load_fixture();
  for (DType dtype : {DType::Float32, DType::Float64}) {
    const double rtol = dtype == DType::Float32 ? 1e-5 : 1e-12;
    for (const auto& c : fixture["reduce"]) {
      CAPTURE(c["shape"].dump());
      CAPTURE(c["dims"].dump());
      const Tensor x = from_json(c["x"], c["shape"], dtype);
      const auto dims = c["dims"].get<std::vector<std::int64_t>>();
      CHECK(x.sum(dims).shape() == c["out_shape"].get<Shape>());
      CHECK(x.sum(dims, true).shape() == c["sum_keepdim_shape"].get<Shape>());
      CHECK(all_close(x.sum(dims), c["sum"].get<std::vector<double>>(), rtol, 1e-6));
      CHECK(all_close(x.mean(dims), c["mean"].get<std::vector<double>>(), rtol, 1e-6));
      CHECK(all_close(x.var(dims), c["var"].get<std::vector<double>>(), rtol, 1e-6));
      CHECK(all_close(x.var(dims, false, true), c["var_unbiased"].get<std::vector<double>>(), rtol,
                      1e-6));
      if (c.contains("max")) {
        const std::int64_t dim = dims.empty() ? 0 : dims[0];
        CHECK(all_close(x.max(dim), c["max"].get<std::vector<double>>()));
        CHECK(x.argmax(dim).to_vector<std::int64_t>() ==
              c["argmax"].get<std::vector<std::int64_t>>());
      }
    }
  }
}

TEST_CASE("reductions give the same bits on one thread and on two") {
  Generator generator(3);
  const Tensor x = randn({300, 5000}, generator);
  const int threads = get_num_threads();
  set_num_threads(1);
  const auto one = std::make_tuple(x.sum().item(), x.sum({0}).to_vector<float>(),
                                   x.sum({1}).to_vector<float>(), x.var({1}).to_vector<float>());
  set_num_threads(2);
  const auto two = std::make_tuple(x.sum().item(), x.sum({0}).to_vector<float>(),
                                   x.sum({1}).to_vector<float>(), x.var({1}).to_vector<float>());
  set_num_threads(threads);
  CHECK(one == two);
}

TEST_CASE("a float32 sum of ten million values keeps its precision") {
  const Tensor x = full({10'000'000}, 0.1);
  CHECK(x.sum().item() == doctest::Approx(1e6).epsilon(1e-6));
  CHECK(x.mean().item() == doctest::Approx(0.1).epsilon(1e-6));
}

TEST_CASE("reductions refuse bad dims with clear errors") {
  const Tensor x = zeros({2, 3});
  CHECK_ERROR(x.sum({2}), "sum", "dim 2", "rank 2");
  CHECK_ERROR(x.sum({1, -1}), "sum", "more than once");
  CHECK_ERROR(x.mean({-3}), "mean", "dim -3");
  CHECK_ERROR(zeros({1, 3}).var({0}, false, true), "var", "at least 2");
  CHECK_ERROR(zeros({0, 3}).max(0), "max", "size 0");
  CHECK_ERROR(x.argmax(5), "argmax", "dim 5");
  CHECK_ERROR(zeros({2}, {.dtype = DType::Int64}).mean(), "mean", "int64");
  CHECK(zeros({0, 3}).sum({0}).to_vector<float>() == std::vector<float>{0, 0, 0});
}
