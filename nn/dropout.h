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

// The scaled mask that dropout multiplies by: 1 / (1 - p) where a value is kept (probability
// 1 - p), 0 elsewhere; all ones for p = 0. Drawn once and reused at every time step, it gives
// variational dropout (Gal and Ghahramani, 2016): a mask [B, 1, E] broadcast over a sentence's
// positions, or [B, H] given to a recurrent cell as its state dropout. Not differentiated.
Tensor dropout_mask(const Shape& shape, double p, Generator& generator,
                    const TensorOptions& options = {});
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
