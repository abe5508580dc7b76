#include "nn/dropout.h"

#include "autograd/grad_mode.h"
#include "autograd/ops.h"
#include "base/error.h"
#include "profiler/recorder.h"

namespace normgrad::nn {

namespace functional {

Tensor dropout(const Tensor& x, double p, bool training, Generator& generator) {
  NG_CHECK(x.defined(), "dropout", "the input is undefined");
  NG_CHECK(p >= 0 && p <= 1, "dropout", "p must lie in [0, 1], got ", p);
  NG_CHECK(is_floating(x.dtype()), "dropout", "expects a floating-point input, got ", x.dtype());
  if (!training || p == 0) return x;
  if (x.dtype() == DType::BFloat16 && p < 1) {
    // A bfloat16 mask would hold 1 / (1 - p) rounded (1.109375 for p = 0.1, 0.16% low) and bias
    // every kept value. The mask holds float32's draws as 0 and 1, exact in bfloat16, and the
    // scale comes as the product's scalar, applied in float32 and rounded once.
    Tensor keep;
    {
      NoGradGuard no_grad;
      keep = ge(rand(x.shape(), generator, {.dtype = DType::Float32, .device = x.device()}), p)
                 .to(DType::BFloat16);
    }
    return x * keep * (1.0 / (1.0 - p));
  }
  return x * dropout_mask(x.shape(), p, generator, {.dtype = x.dtype(), .device = x.device()});
}

Tensor dropout_mask(const Shape& shape, double p, Generator& generator,
                    const TensorOptions& options) {
  NG_CHECK(p >= 0 && p <= 1, "dropout_mask", "p must lie in [0, 1], got ", p);
  NG_CHECK(is_floating(options.dtype), "dropout_mask", "needs a floating-point dtype, got ",
           options.dtype);
  NoGradGuard no_grad;
  if (p == 0) return ones(shape, options);
  // Kept where a uniform draw on [0, 1) is at least p: probability 1 - p. For p = 1 nothing
  // is kept, and the scale is never used.
  const Tensor keep = ge(rand(shape, generator, options), p);
  return p < 1 ? keep * (1.0 / (1.0 - p)) : keep;
}

}  // namespace functional

Dropout::Dropout(double p, Generator* generator) : p_(p), generator_(generator) {
  NG_CHECK(p >= 0 && p <= 1, "Dropout", "p must lie in [0, 1], got ", p);
}

Tensor Dropout::forward(const Tensor& x) {
  const profiler::ModuleSpan span(this, "Dropout");

  return functional::dropout(x, p_, is_training(),
                             generator_ != nullptr ? *generator_ : default_generator());
}

GaussianNoise::GaussianNoise(double sigma, Generator* generator)
    : sigma_(sigma), generator_(generator) {
  NG_CHECK(sigma >= 0, "GaussianNoise", "sigma must be non-negative, got ", sigma);
}

Tensor GaussianNoise::forward(const Tensor& x) {
  const profiler::ModuleSpan span(this, "GaussianNoise");

  NG_CHECK(x.defined(), "GaussianNoise", "the input is undefined");
  NG_CHECK(is_floating(x.dtype()), "GaussianNoise", "expects a floating-point input, got ",
           x.dtype());
  if (!is_training() || sigma_ == 0) return x;
  Tensor noise;
  {
    NoGradGuard no_grad;
    Generator& generator = generator_ != nullptr ? *generator_ : default_generator();
    noise = randn(x.shape(), generator, {.dtype = x.dtype(), .device = x.device()}) * sigma_;
  }
  return x + noise;
}

}  // namespace normgrad::nn
