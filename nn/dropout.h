#pragma once
// Layers that add noise in training only, and pass their input through in evaluation.
//
// Dropout (inverted): each value is kept with probability 1 - p and scaled by 1 / (1 - p),
// so the expected output equals the input and evaluation needs no rescaling.
// GaussianNoise: adds N(0, sigma^2) noise to every value (the paper's CIFAR model puts
// sigma = 0.15 on its input).
//
// Both draw from a Generator: the default one unless another is given (which must outlive the
// layer), so a seeded run drops the same values every time.

#include "core/generator.h"
#include "nn/layer.h"

namespace normgrad::nn {

namespace functional {
// The masks are not differentiated: the gradient flows through the kept values alone.
Tensor dropout(const Tensor& x, double p, bool training,
               Generator& generator = default_generator());
}  // namespace functional

class Dropout : public Layer {
 public:
  explicit Dropout(double p = 0.5, Generator* generator = nullptr);
  std::string type_name() const override { return "Dropout"; }
  Tensor forward(const Tensor& x) override;

 private:
  double p_;
  Generator* generator_;
};

class GaussianNoise : public Layer {
 public:
  explicit GaussianNoise(double sigma, Generator* generator = nullptr);
  std::string type_name() const override { return "GaussianNoise"; }
  Tensor forward(const Tensor& x) override;

 private:
  double sigma_;
  Generator* generator_;
};

}  // namespace normgrad::nn
