#pragma once
// Parameter initialisers. Each fills a tensor in place (without recording a graph) from a
// seeded Generator, and returns it (a handle to the same data). Fans follow PyTorch's convention: for a weight of shape
// [out, in, k1, k2, ...], fan_in = in * k1 * k2 * ... and fan_out = out * k1 * k2 * ...

#include <string>

#include "core/generator.h"
#include "core/tensor.h"

namespace normgrad::nn::init {

enum class FanMode { FanIn, FanOut };

struct Fans {
  std::int64_t fan_in;
  std::int64_t fan_out;
};
Fans compute_fans(const Tensor& weight);  // needs at least 2 dims

// Recommended gain for a nonlinearity: linear/sigmoid 1, tanh 5/3, relu sqrt(2),
// leaky_relu sqrt(2 / (1 + slope^2)).
double gain_for(const std::string& nonlinearity, double negative_slope = 0.01);

Tensor constant_(Tensor tensor, double value);
Tensor uniform_(Tensor tensor, double low, double high, Generator& generator = default_generator());
Tensor normal_(Tensor tensor, double mean, double std, Generator& generator = default_generator());
// Glorot & Bengio: U(-a, a) with a = gain * sqrt(6 / (fan_in + fan_out)), or
// N(0, gain^2 * 2 / (fan_in + fan_out)).
Tensor xavier_uniform_(Tensor tensor, double gain = 1.0, Generator& generator = default_generator());
Tensor xavier_normal_(Tensor tensor, double gain = 1.0, Generator& generator = default_generator());
// He et al.: std = gain / sqrt(fan), with gain from `nonlinearity` and `negative_slope`;
// uniform on [-sqrt(3) std, sqrt(3) std] or normal.
Tensor kaiming_uniform_(Tensor tensor, double negative_slope = 0.0, FanMode mode = FanMode::FanIn,
                         const std::string& nonlinearity = "leaky_relu",
                         Generator& generator = default_generator());
Tensor kaiming_normal_(Tensor tensor, double negative_slope = 0.0, FanMode mode = FanMode::FanIn,
                        const std::string& nonlinearity = "leaky_relu",
                        Generator& generator = default_generator());

// Saxe et al.: a (semi-)orthogonal matrix from the QR factorisation of a Gaussian one, with
// the signs fixed by R's diagonal so the result is uniformly distributed, times gain. A weight
// of shape [rows, ...] is treated as [rows, cols]: its rows are orthonormal when
// rows <= cols, its columns when rows >= cols.
Tensor orthogonal_(Tensor tensor, double gain = 1.0, Generator& generator = default_generator());

}  // namespace normgrad::nn::init
