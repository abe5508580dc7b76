#include "nn/init.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "autograd/grad_mode.h"
#include "autograd/ops.h"
#include "backends/lapack.h"
#include "base/error.h"

namespace normgrad::nn::init {

namespace {

void check_float(const Tensor& tensor, const char* op) {
  NG_CHECK(tensor.defined(), op, "the tensor is undefined");
  NG_CHECK(is_floating(tensor.dtype()), op, "needs a floating-point tensor, got ", tensor.dtype());
}

// Writes a fresh draw into `tensor`, whatever its layout or device.
Tensor assign(Tensor tensor, const Tensor& values) {
  NoGradGuard no_grad;
  tensor.copy_(values);
  return tensor;
}

}  // namespace

Fans compute_fans(const Tensor& weight) {
  NG_CHECK(weight.defined() && weight.dim() >= 2, "compute_fans",
           "needs a weight with at least 2 dims, got shape ",
           weight.defined() ? to_string(weight.shape()) : "undefined");
  std::int64_t receptive_field = 1;
  for (std::int64_t d = 2; d < weight.dim(); ++d) receptive_field *= weight.size(d);
  return {weight.size(1) * receptive_field, weight.size(0) * receptive_field};
}

double gain_for(const std::string& nonlinearity, double negative_slope) {
  if (nonlinearity == "linear" || nonlinearity == "sigmoid" || nonlinearity == "conv") return 1.0;
  if (nonlinearity == "tanh") return 5.0 / 3.0;
  if (nonlinearity == "relu") return std::sqrt(2.0);
  if (nonlinearity == "leaky_relu") return std::sqrt(2.0 / (1.0 + negative_slope * negative_slope));
  throw Error("gain_for: unknown nonlinearity \"" + nonlinearity +
              "\" (expected linear, conv, sigmoid, tanh, relu or leaky_relu)");
}

Tensor constant_(Tensor tensor, double value) {
  check_float(tensor, "constant_");
  NoGradGuard no_grad;
  tensor.fill_(value);
  return tensor;
}

Tensor uniform_(Tensor tensor, double low, double high, Generator& generator) {
  check_float(tensor, "uniform_");
  NG_CHECK(low <= high, "uniform_", "low ", low, " is above high ", high);
  const Tensor draw = rand(tensor.shape(), generator, {.dtype = tensor.dtype()});
  return assign(tensor, (draw * (high - low) + low).to(tensor.device()));
}

Tensor normal_(Tensor tensor, double mean, double std, Generator& generator) {
  check_float(tensor, "normal_");
  NG_CHECK(std >= 0, "normal_", "standard deviation must be non-negative, got ", std);
  const Tensor draw = randn(tensor.shape(), generator, {.dtype = tensor.dtype()});
  return assign(tensor, (draw * std + mean).to(tensor.device()));
}

Tensor xavier_uniform_(Tensor tensor, double gain, Generator& generator) {
  const Fans fans = compute_fans(tensor);
  const double bound = gain * std::sqrt(6.0 / static_cast<double>(fans.fan_in + fans.fan_out));
  return uniform_(tensor, -bound, bound, generator);
}

Tensor xavier_normal_(Tensor tensor, double gain, Generator& generator) {
  const Fans fans = compute_fans(tensor);
  return normal_(tensor, 0.0,
                 gain * std::sqrt(2.0 / static_cast<double>(fans.fan_in + fans.fan_out)),
                 generator);
}

namespace {
double kaiming_std(const Tensor& tensor, double negative_slope, FanMode mode,
                   const std::string& nonlinearity) {
  const Fans fans = compute_fans(tensor);
  const std::int64_t fan = mode == FanMode::FanIn ? fans.fan_in : fans.fan_out;
  NG_CHECK(fan > 0, "kaiming init", "the fan of shape ", tensor.shape(), " is 0");
  return gain_for(nonlinearity, negative_slope) / std::sqrt(static_cast<double>(fan));
}
}  // namespace

Tensor kaiming_uniform_(Tensor tensor, double negative_slope, FanMode mode,
                        const std::string& nonlinearity, Generator& generator) {
  const double bound = std::sqrt(3.0) * kaiming_std(tensor, negative_slope, mode, nonlinearity);
  return uniform_(tensor, -bound, bound, generator);
}

Tensor kaiming_normal_(Tensor tensor, double negative_slope, FanMode mode,
                       const std::string& nonlinearity, Generator& generator) {
  return normal_(tensor, 0.0, kaiming_std(tensor, negative_slope, mode, nonlinearity), generator);
}

Tensor orthogonal_(Tensor tensor, double gain, Generator& generator) {
  check_float(tensor, "orthogonal_");
  NG_CHECK(tensor.dim() >= 2 && tensor.numel() > 0, "orthogonal_",
           "needs a non-empty tensor with at least 2 dims, got shape ", tensor.shape());
  const std::int64_t rows = tensor.size(0), cols = tensor.numel() / rows;
  const bool wide = rows < cols;
  const std::int64_t m = std::max(rows, cols), n = std::min(rows, cols);
  // LAPACK wants a column-major m x n matrix. A row-major [n, m] buffer is exactly that.
  Tensor gaussian = randn({rows, cols}, generator, {.dtype = DType::Float64});
  Tensor buffer = (wide ? gaussian : gaussian.t()).contiguous();  // row-major [n, m]
  std::vector<double> r_diagonal(static_cast<std::size_t>(n));
  lapack::thin_qr(buffer.data_ptr<double>(), static_cast<int>(m), static_cast<int>(n),
                  r_diagonal.data());
  // Column j of Q (row j of the buffer) times sign(R_jj) makes the factorisation unique.
  std::vector<double> signs(r_diagonal.size());
  for (std::size_t j = 0; j < signs.size(); ++j) signs[j] = r_diagonal[j] < 0 ? -1.0 : 1.0;
  Tensor q = buffer * from_vector(signs, {n, 1});  // row-major [n, m]: Q transposed
  Tensor result = (wide ? q : q.t()) * gain;       // [rows, cols]
  return assign(tensor, result.reshape(tensor.shape()).to(tensor.dtype()).to(tensor.device()));
}

}  // namespace normgrad::nn::init
