// Seeded random tensors: the same seed gives the same numbers, whatever the thread count,
// and the draws have the right distribution.

#include "helpers.h"

using namespace normgrad;

TEST_CASE("the same seed gives the same numbers, and different seeds differ") {
  Generator g1(42), g2(42), g3(43);
  const std::vector<float> first = randn({1000}, g1).to_vector<float>();
  CHECK(first == randn({1000}, g2).to_vector<float>());
  CHECK(first != randn({1000}, g3).to_vector<float>());
  // The stream moves on: a second draw differs from the first.
  CHECK(randn({1000}, g1).to_vector<float>() != first);
  manual_seed(7);
  const std::vector<float> a = rand({10}).to_vector<float>();
  manual_seed(7);
  CHECK(rand({10}).to_vector<float>() == a);
}

TEST_CASE("random draws do not depend on the thread count") {
  const int threads = get_num_threads();
  set_num_threads(1);
  Generator g1(5);
  const std::vector<double> one =
      randn({100000}, g1, {.dtype = DType::Float64}).to_vector<double>();
  set_num_threads(2);
  Generator g2(5);
  const std::vector<double> two =
      randn({100000}, g2, {.dtype = DType::Float64}).to_vector<double>();
  set_num_threads(threads);
  CHECK(one == two);
  CHECK_ERROR(set_num_threads(0), "set_num_threads", "at least 1");
}

TEST_CASE("uniform, normal and integer draws have the right moments and range") {
  Generator generator(2026);
  const Tensor u = rand({200000}, generator, {.dtype = DType::Float64});
  CHECK(u.mean().item() == doctest::Approx(0.5).epsilon(0.01));
  CHECK(u.var().item() == doctest::Approx(1.0 / 12).epsilon(0.02));
  CHECK(u.max().item() < 1.0);
  CHECK(min(u).item() >= 0.0);
  const Tensor n = randn({200000}, generator, {.dtype = DType::Float64});
  CHECK(std::fabs(n.mean().item()) < 0.01);
  CHECK(n.var().item() == doctest::Approx(1.0).epsilon(0.02));
  const Tensor k = randint(-3, 4, {100000}, generator);
  CHECK(k.dtype() == DType::Int64);
  CHECK(min(k).item() == -3);
  CHECK(k.max().item() == 3);
  CHECK(std::fabs(k.to(DType::Float64).mean().item()) < 0.05);  // std of the mean: 0.006
}

TEST_CASE("a generator's state is its seed and offset") {
  Generator generator(9);
  randn({10}, generator);
  CHECK(generator.offset() == 10);
  Generator copy = generator;
  CHECK(randn({5}, copy).to_vector<float>() == randn({5}, generator).to_vector<float>());
  generator.manual_seed(9);
  CHECK(generator.offset() == 0);
}
