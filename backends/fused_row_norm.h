#pragma once
// A row normaliser (LayerNorm or the RMS family: backend.h's NormParams) applied value by value
// inside a fused kernel that also does other work (the normed recurrent steps): its statistic
// from a row's sums, a normalised value, and backward's row sums and gradient. Host and device
// code share it (NORMGRAD_HOST_DEVICE), so the CPU and CUDA kernels compute alike; everything
// is in double. Formulas as in backends/cpu/norm_rows.h; the saved mean is the forward's
// rounded to the data type (`head`), and backward recovers the rest (`tail`) from
// sum(a - head).

#include <cmath>
#include <cstdint>

#include "backends/backend.h"
#include "backends/host_device.h"

namespace normgrad::backend {

// A norm as the fused kernels read it: NormParams and its gain and bias, stored as T (the data's
// type: bfloat16 too, whose values are widened as they are read).
template <typename T> struct FusedRowNorm {
  bool centred = false;
  std::int64_t k = 0;  // RMS family: the leading values that give the statistic
  double divisor = 1;  // RMS family
  double eps = 0;
  bool eps_inside_sqrt = true;
  const T* gain = nullptr;  // null: 1
  const T* bias = nullptr;  // null: 0

  NORMGRAD_HOST_DEVICE double gain_at(std::int64_t i) const { return gain ? double(gain[i]) : 1.0; }
  NORMGRAD_HOST_DEVICE double bias_at(std::int64_t i) const { return bias ? double(bias[i]) : 0.0; }

  // Value a's term in the first sum of its block: the mean's (LayerNorm), or its square when it
  // is one of the first k (RMS family).
  NORMGRAD_HOST_DEVICE double statistic_term(double a, std::int64_t i) const {
    if (centred) return a;
    return i < k ? a * a : 0.0;
  }
  // 1 / r from the block's sum: of squared deviations (LayerNorm), of squares (RMS family).
  NORMGRAD_HOST_DEVICE double inverse_r(double sum, std::int64_t n) const {
    if (centred) return 1.0 / ::sqrt(sum / double(n) + eps);
    const double mean_square = sum / divisor;
    return 1.0 / (eps_inside_sqrt ? ::sqrt(mean_square + eps) : ::sqrt(mean_square) + eps);
  }
  // The normalised value, in the type of `a` (the kernel's compute type).
  template <typename V>
  NORMGRAD_HOST_DEVICE V normalise(V a, std::int64_t i, double mean, double inverse_r) const {
    return V((double(a) - mean) * inverse_r * gain_at(i) + bias_at(i));
  }
};

template <typename T>
FusedRowNorm<T> fused_row_norm(const NormParams& params, const TensorRef* gain,
                               const TensorRef* bias) {
  FusedRowNorm<T> norm;
  norm.centred = params.centred;
  norm.k = params.k;
  norm.divisor = params.divisor;
  norm.eps = params.eps;
  norm.eps_inside_sqrt = params.eps_inside_sqrt;
  norm.gain = gain ? gain->ptr<const T>() : nullptr;
  norm.bias = bias ? bias->ptr<const T>() : nullptr;
  return norm;
}

// Backward's row sums, value by value, with dŷ = g dy and the saved mean `head` (the forward's
// mean rounded to T): LayerNorm sums dŷ, dŷ (a - head) and (a - head) into sums[0..2]; the RMS
// family sums dŷ a over every value into sums[0].
template <typename T>
NORMGRAD_HOST_DEVICE void add_row_terms(const FusedRowNorm<T>& norm, double dy, double a,
                                        std::int64_t i, double head, double* sums) {
  const double dyhat = norm.gain_at(i) * dy;
  if (norm.centred) {
    const double deviation = a - head;
    sums[0] += dyhat;
    sums[1] += dyhat * deviation;
    sums[2] += deviation;
  } else {
    sums[0] += dyhat * a;
  }
}

// What turns dy into da along one row, from its row sums.
struct RowCoefficients {
  double head = 0, tail = 0;  // LayerNorm: the mean, as the saved head and the rest
  double inverse_r = 0;
  double mean_dyhat = 0, mean_dyhat_yhat = 0;  // LayerNorm
  double correction = 0;                       // RMS family: c
};

template <typename T>
NORMGRAD_HOST_DEVICE RowCoefficients coefficients(const FusedRowNorm<T>& norm, const double* sums,
                                                  std::int64_t n, double head, double inverse_r) {
  RowCoefficients co;
  co.head = head;
  co.inverse_r = inverse_r;
  if (norm.centred) {
    co.tail = sums[2] / double(n);
    co.mean_dyhat = sums[0] / double(n);
    co.mean_dyhat_yhat = (sums[1] - co.tail * sums[0]) * inverse_r / double(n);
  } else if (norm.eps_inside_sqrt) {
    co.correction = sums[0] * inverse_r * inverse_r * inverse_r / norm.divisor;
  } else {
    // rho = sqrt(q) = 0 (the first k values all 0) has no derivative: c = 0 there, as the
    // CPU's norm kernel defines it.
    const double r = 1.0 / inverse_r, rho = r - norm.eps;
    if (rho > 0) co.correction = sums[0] / (norm.divisor * rho * r * r);
  }
  return co;
}

// da for value a at column i of the row, given dy; ŷ goes to yhat.
template <typename T>
NORMGRAD_HOST_DEVICE double raw_gradient(const FusedRowNorm<T>& norm, const RowCoefficients& co,
                                         double dy, double a, std::int64_t i, double& yhat) {
  const double dyhat = norm.gain_at(i) * dy;
  if (norm.centred) {
    yhat = ((a - co.head) - co.tail) * co.inverse_r;
    return (dyhat - co.mean_dyhat - yhat * co.mean_dyhat_yhat) * co.inverse_r;
  }
  yhat = a * co.inverse_r;
  return dyhat * co.inverse_r - (i < norm.k ? a * co.correction : 0.0);
}

}  // namespace normgrad::backend
