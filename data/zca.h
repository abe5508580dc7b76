#pragma once
// ZCA whitening, as the WeightNorm paper's code fits it for CIFAR-10 (and the RMSNorm paper
// follows): on the training samples, flattened to rows x of D values,
//
//   mean  m = the mean row;  covariance  S = (X - m)^T (X - m) / N  (population: divided by N)
//   S = U diag(l) U^T  (symmetric eigendecomposition, LAPACK's dsyevd)
//   W = U diag(1 / sqrt(l + regularization)) U^T,     whiten(x) = (x - m) W
//
// W is symmetric, and whitened training samples have covariance U diag(l / (l + r)) U^T:
// the identity on every direction whose variance is well above the regularisation, and close
// to zero on directions with none (a constant border around every image). Fitting computes
// in float64; the mean and W are kept in float32, the dtype the samples are whitened in.
// Eigenvalues that rounding leaves slightly below zero count as zero.

#include <cstdint>

#include "core/tensor.h"
#include "io/checkpoint.h"

namespace normgrad::data {

class ZcaWhitening {
 public:
  static constexpr double default_regularization = 1e-5;

  // Fits on float32 or float64 samples [N, ...] (N >= 2; each sample flattened to D values,
  // D at most max_dimension); the samples stay untouched.
  static ZcaWhitening fit(const Tensor& samples, double regularization = default_regularization);
  static constexpr std::int64_t max_dimension = 8192;

  // Samples [N, ...] of D values each -> whitened float32 samples of the same shape, on the
  // samples' device.
  Tensor apply(const Tensor& samples) const;

  std::int64_t dimension() const { return mean_.numel(); }
  double regularization() const { return regularization_; }
  const Tensor& mean() const { return mean_; }      // float32 [D]
  const Tensor& matrix() const { return matrix_; }  // float32 [D, D], symmetric

  // For a model folder: "<prefix>mean", "<prefix>matrix" and "<prefix>regularization" (a
  // float64 scalar), and back. from_state checks that they are there and fit together.
  nn::StateDict state(const std::string& prefix = "zca.") const;
  static ZcaWhitening from_state(const nn::StateDict& state, const std::string& prefix = "zca.");

 private:
  ZcaWhitening(Tensor mean, Tensor matrix, double regularization);
  Tensor mean_, matrix_;
  double regularization_ = default_regularization;
};

}  // namespace normgrad::data
