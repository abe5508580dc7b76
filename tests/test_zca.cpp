// ZCA whitening (data/zca.h) against NumPy's, fitted independently through an SVD
// (fixtures/generate_zca.py), and the symmetric eigendecomposition under it.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "backends/lapack.h"
#include "data/zca.h"
#include "fixture_helpers.h"
#include "helpers.h"

using namespace normgrad;
using testing::all_close;

namespace {

// The largest |actual - expected| over the largest |expected|: the mean and the matrix are
// kept in float32, so agreement is asked to float32 rounding of the largest entry.
double relative_error(const Tensor& actual, const std::vector<double>& expected) {
  const std::vector<double> values = actual.to_vector<double>();
  REQUIRE(values.size() == expected.size());
  double error = 0, scale = 0;
  for (std::size_t i = 0; i < values.size(); ++i) {
    error = std::max(error, std::fabs(values[i] - expected[i]));
    scale = std::max(scale, std::fabs(expected[i]));
  }
  return error / scale;
}

Tensor identity(std::int64_t n) {
  std::vector<double> values(static_cast<std::size_t>(n * n), 0.0);
  for (std::int64_t i = 0; i < n; ++i) values[static_cast<std::size_t>(i * n + i)] = 1.0;
  return from_vector(values, {n, n});
}

Shape shape_of(const testing::json& c) {
  std::vector<std::int64_t> dims = c["shape"].get<std::vector<std::int64_t>>();
  return Shape(dims.begin(), dims.end());
}

}  // namespace

TEST_CASE("symmetric_eigen: eigenvalues ascending, orthonormal eigenvectors, A V = V diag(w)") {
  // [[2, 1], [1, 2]]: eigenvalues 1 and 3, eigenvectors (1, -1) / sqrt 2 and (1, 1) / sqrt 2.
  std::vector<double> small{2, 1, 1, 2};
  std::vector<double> values(2);
  lapack::symmetric_eigen(small.data(), 2, values.data());
  CHECK(values[0] == doctest::Approx(1.0).epsilon(1e-14));
  CHECK(values[1] == doctest::Approx(3.0).epsilon(1e-14));
  const double half_root = std::sqrt(0.5);
  CHECK(std::fabs(small[0] * small[1]) == doctest::Approx(0.5).epsilon(1e-14));
  CHECK(small[0] * small[1] < 0);  // the first eigenvector has opposite signs
  CHECK(std::fabs(small[2]) == doctest::Approx(half_root).epsilon(1e-14));
  CHECK(small[2] * small[3] > 0);

  // A random symmetric 7 x 7 matrix: the residual of A V = V diag(w) and of V^T V = I.
  const std::int64_t n = 7;
  Tensor a = randn({n, n}, {.dtype = DType::Float64});
  a = (a + a.t()).contiguous();
  Tensor v = a.clone();
  std::vector<double> w(n);
  lapack::symmetric_eigen(v.data_ptr<double>(), static_cast<int>(n), w.data());
  CHECK(std::is_sorted(w.begin(), w.end()));
  const Tensor vectors = v.t();  // column j: eigenvector j
  CHECK(all_close(matmul(a, vectors), vectors * from_vector(w, {1, n}), 1e-12, 1e-12));
  CHECK(all_close(matmul(vectors.t(), vectors), identity(n), 1e-12, 1e-12));

  std::vector<double> bad{1, std::numeric_limits<double>::quiet_NaN(), 0, 1};
  CHECK_ERROR(lapack::symmetric_eigen(bad.data(), 2, values.data()), "symmetric_eigen", "nan",
              "row 1, column 0");
  CHECK_ERROR(lapack::symmetric_eigen(bad.data(), 0, values.data()), "symmetric_eigen",
              "n = 0");
}

TEST_CASE("ZcaWhitening matches NumPy's ZCA fitted through an SVD, float32 and float64 samples") {
  for (const auto& c : testing::fixture_file("zca.json")["cases"]) {
    INFO("case: " << c["name"].get<std::string>());
    const Tensor x = from_vector(c["x"].get<std::vector<double>>(), shape_of(c));
    for (const DType dtype : {DType::Float64, DType::Float32}) {
      INFO("dtype: " << to_string(dtype));
      const auto zca = data::ZcaWhitening::fit(x.to(dtype), c["regularization"].get<double>());
      CHECK(zca.dimension() == x.numel() / x.size(0));
      CHECK(zca.mean().dtype() == DType::Float32);
      CHECK(relative_error(zca.mean(), c["mean"].get<std::vector<double>>()) < 1e-5);
      CHECK(relative_error(zca.matrix(), c["matrix"].get<std::vector<double>>()) < 1e-5);
      CHECK(all_close(zca.matrix(), zca.matrix().t(), 0, 1e-5));
      const Tensor whitened = zca.apply(x);
      CHECK(whitened.shape() == x.shape());
      CHECK(whitened.dtype() == DType::Float32);
      CHECK(relative_error(whitened, c["whitened"].get<std::vector<double>>()) < 1e-5);
    }
  }
}

TEST_CASE("ZcaWhitening: whitened training samples have zero mean and unit covariance") {
  // Strongly correlated samples: 500 of 8 values, a mixing of independent ones that adds a
  // common part (0.9 of each) to every value, plus a little noise. Its smallest singular value
  // stays near 1, so every direction's variance is far above the regularisation. (A mixing
  // drawn at random, from the global generator, could have a direction of variance below 0.01,
  // where the regularisation's share exceeds the tolerance below; whether it did depended on
  // the cases run before this one.)
  Generator generator(12);
  const Tensor mixing = identity(8).to(DType::Float64) + 0.9 +
                        randn({8, 8}, generator, {.dtype = DType::Float64}) * 0.1;
  const Tensor x = matmul(randn({500, 8}, generator, {.dtype = DType::Float64}), mixing) + 3.0;
  const Tensor whitened = data::ZcaWhitening::fit(x).apply(x).to(DType::Float64);
  const Tensor mean = whitened.mean({0});
  CHECK(all_close(mean, zeros({8}, {.dtype = DType::Float64}), 0, 1e-5));
  const Tensor centred = whitened - mean;
  const Tensor covariance = matmul(centred.t(), centred) / 500.0;
  // Identity, less the regularisation's share r / (l + r) on each direction.
  CHECK(all_close(covariance, identity(8), 0, 1e-3));
  // ZCA is the whitening closest to the data: each value stays correlated with its own input.
  const Tensor own = (centred * (x - x.mean({0}))).sum({0});
  CHECK(normgrad::min(own).item() > 0);
}

TEST_CASE("ZcaWhitening's state goes into a model folder and back, checked") {
  const Tensor x = randn({30, 2, 2});
  const auto zca = data::ZcaWhitening::fit(x, 1e-3);
  const nn::StateDict state = zca.state();
  CHECK(state.size() == 3);
  const auto restored = data::ZcaWhitening::from_state(state);
  CHECK(restored.regularization() == 1e-3);
  CHECK(all_close(restored.apply(x), zca.apply(x), 0, 0));

  nn::StateDict missing = state;
  missing.erase("zca.matrix");
  CHECK_ERROR(data::ZcaWhitening::from_state(missing), "ZcaWhitening::from_state", "zca.matrix");
  nn::StateDict other_size = state;
  other_size["zca.matrix"] = zeros({3, 3});
  CHECK_ERROR(data::ZcaWhitening::from_state(other_size), "ZcaWhitening::from_state", "[4, 4]",
              "[3, 3]");
  nn::StateDict bad_regularization = state;
  bad_regularization["zca.regularization"] = scalar_tensor(-1.0, {.dtype = DType::Float64});
  CHECK_ERROR(data::ZcaWhitening::from_state(bad_regularization), "ZcaWhitening::from_state", "-1");
  CHECK(data::ZcaWhitening::from_state(zca.state("input."), "input.").dimension() == 4);
}

TEST_CASE("ZcaWhitening refuses samples it cannot fit or whiten") {
  const Tensor x = randn({10, 3});
  CHECK_ERROR(data::ZcaWhitening::fit(randn({1, 3})), "ZcaWhitening::fit", "at least 2 samples");
  CHECK_ERROR(data::ZcaWhitening::fit(randn({5})), "ZcaWhitening::fit", "[5]");
  CHECK_ERROR(data::ZcaWhitening::fit(arange(0, 6, 1, {.dtype = DType::Int64}).reshape({3, 2})),
              "ZcaWhitening::fit", "int64");
  CHECK_ERROR(data::ZcaWhitening::fit(x, 0.0), "ZcaWhitening::fit", "regularization", "0");
  CHECK_ERROR(data::ZcaWhitening::fit(zeros({2, data::ZcaWhitening::max_dimension + 1})),
              "ZcaWhitening::fit", "8193");
  Tensor with_nan = x.clone();
  with_nan.data_ptr<float>()[4] = std::numeric_limits<float>::quiet_NaN();
  CHECK_ERROR(data::ZcaWhitening::fit(with_nan), "ZcaWhitening::fit", "not finite");
  const auto zca = data::ZcaWhitening::fit(x);
  CHECK_ERROR(zca.apply(randn({4, 5})), "ZcaWhitening::apply", "3 values", "[4, 5]");
}
