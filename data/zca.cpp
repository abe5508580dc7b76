#include "data/zca.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "autograd/grad_mode.h"
#include "autograd/ops.h"
#include "backends/lapack.h"
#include "base/error.h"

namespace normgrad::data {

namespace {

// Rows converted to float64 at a time while fitting: the whole of CIFAR-10 in float64 would
// take 1.2 GB.
constexpr std::int64_t fit_chunk_rows = 4096;

// The samples [N, ...] as a matrix [N, D], checked.
Tensor as_rows(const Tensor& samples, const char* operation) {
  NG_CHECK(samples.defined(), operation, "got an undefined tensor");
  NG_CHECK(is_floating(samples.dtype()), operation, "needs float32 or float64 samples, got ",
           to_string(samples.dtype()));
  NG_CHECK(samples.dim() >= 2, operation, "needs samples [N, ...] with at least 2 dims, got shape ",
           samples.shape());
  const std::int64_t n = samples.size(0);
  return samples.reshape({n, n == 0 ? 0 : samples.numel() / n});
}

}  // namespace

ZcaWhitening::ZcaWhitening(Tensor mean, Tensor matrix, double regularization)
    : mean_(std::move(mean)), matrix_(std::move(matrix)), regularization_(regularization) {}

ZcaWhitening ZcaWhitening::fit(const Tensor& samples, double regularization) {
  NoGradGuard no_grad;
  NG_CHECK(std::isfinite(regularization) && regularization > 0, "ZcaWhitening::fit",
           "the regularization must be positive and finite, got ", regularization);
  const Tensor rows = as_rows(samples, "ZcaWhitening::fit").to(Device::cpu());
  const std::int64_t n = rows.size(0), d = rows.size(1);
  NG_CHECK(n >= 2, "ZcaWhitening::fit", "needs at least 2 samples, got ", n);
  NG_CHECK(d >= 1 && d <= max_dimension, "ZcaWhitening::fit", "each sample has ", d,
           " values; ZCA takes 1 to ", max_dimension, " (its matrix is D x D)");

  const auto chunk = [&](std::int64_t first) {
    return rows.slice(0, first, std::min(n, first + fit_chunk_rows)).to(DType::Float64);
  };
  Tensor total = zeros({d}, {.dtype = DType::Float64});
  for (std::int64_t first = 0; first < n; first += fit_chunk_rows)
    total = total + chunk(first).sum({0});
  const Tensor mean = total / static_cast<double>(n);
  NG_CHECK(std::isfinite(mean.sum().item()), "ZcaWhitening::fit",
           "the samples hold a value that is not finite");
  Tensor covariance = zeros({d, d}, {.dtype = DType::Float64});
  for (std::int64_t first = 0; first < n; first += fit_chunk_rows) {
    const Tensor centred = chunk(first) - mean;
    covariance = covariance + matmul(centred.t(), centred);
  }
  covariance = (covariance / static_cast<double>(n)).contiguous();

  // dsyevd leaves the eigenvectors in the columns of a column-major matrix: read row-major,
  // the buffer holds U^T, eigenvector j in row j.
  std::vector<double> eigenvalues(static_cast<std::size_t>(d));
  lapack::symmetric_eigen(covariance.data_ptr<double>(), static_cast<int>(d),
                                eigenvalues.data());
  std::vector<double> scales(eigenvalues.size());
  for (std::size_t j = 0; j < scales.size(); ++j)
    scales[j] = 1.0 / std::sqrt(std::max(eigenvalues[j], 0.0) + regularization);
  const Tensor& u_transposed = covariance;
  const Tensor matrix = matmul(u_transposed.t(), u_transposed * from_vector(scales, {d, 1}));
  return ZcaWhitening(mean.to(DType::Float32), matrix.to(DType::Float32).contiguous(),
                      regularization);
}

Tensor ZcaWhitening::apply(const Tensor& samples) const {
  const Tensor rows = as_rows(samples, "ZcaWhitening::apply");
  NG_CHECK(rows.size(1) == dimension(), "ZcaWhitening::apply", "was fitted on samples of ",
           dimension(), " values, got samples of shape ", samples.shape(), " (", rows.size(1),
           " values each)");
  const Device device = samples.device();
  const Tensor whitened = matmul(rows.to(DType::Float32) - mean_.to(device), matrix_.to(device));
  return whitened.reshape(samples.shape());
}

nn::StateDict ZcaWhitening::state(const std::string& prefix) const {
  return {{prefix + "mean", mean_},
          {prefix + "matrix", matrix_},
          {prefix + "regularization", scalar_tensor(regularization_, {.dtype = DType::Float64})}};
}

ZcaWhitening ZcaWhitening::from_state(const nn::StateDict& state, const std::string& prefix) {
  const auto get = [&](const std::string& name) -> const Tensor& {
    const auto found = state.find(prefix + name);
    NG_CHECK(found != state.end() && found->second.defined(), "ZcaWhitening::from_state",
             "no tensor '", prefix + name, "'");
    return found->second;
  };
  const Tensor& mean = get("mean");
  const Tensor& matrix = get("matrix");
  const Tensor& regularization = get("regularization");
  NG_CHECK(mean.dtype() == DType::Float32 && mean.dim() == 1 && mean.numel() >= 1,
           "ZcaWhitening::from_state", "'", prefix, "mean' should be float32 [D], got ",
           to_string(mean.dtype()), " ", mean.shape());
  const std::int64_t d = mean.numel();
  NG_CHECK(matrix.dtype() == DType::Float32 && matrix.shape() == Shape({d, d}),
           "ZcaWhitening::from_state", "'", prefix, "matrix' should be float32 [", d, ", ", d,
           "] to go with a mean of ", d, " values, got ", to_string(matrix.dtype()), " ",
           matrix.shape());
  NG_CHECK(regularization.numel() == 1, "ZcaWhitening::from_state", "'", prefix,
           "regularization' should hold one value, got shape ", regularization.shape());
  const double r = regularization.item();
  NG_CHECK(std::isfinite(r) && r > 0, "ZcaWhitening::from_state", "'", prefix,
           "regularization' should be positive, got ", r);
  return ZcaWhitening(mean.to(Device::cpu()).contiguous(), matrix.to(Device::cpu()).contiguous(),
                      r);
}

}  // namespace normgrad::data
