#pragma once
// WeightNorm (Salimans & Kingma 2016): a weight reparameterised as
//   w_i = g_i v_i / ||v_i||
// for each output unit i, where v_i is the unit's row of incoming weights (a Linear weight
// [out, in], or a Conv weight [out, in, kh, kw] flattened per output channel) and g_i its
// gain. The direction v and the length g are trained separately; scaling v_i changes nothing,
// which is WeightNorm's row of the invariance table (the RMSNorm paper's Table 1).
//
// It normalises weights, not activations, so a layer whose NormSpec is "weightnorm" wraps its
// weight in this module instead of normalising its output (see factory.h).
//
//   nn::WeightNorm wn(randn({4, 3}));        // v = that weight, g = its row norms
//   Tensor y = matmul(x, wn.weight().t());   // weight() == the original weight at first
//
// Data-dependent initialisation (paper, Appendix A.4): run a first batch through the layer with no
// bias, pass the outputs to init_from_data(), and set the layer's bias to what it returns;
// each unit's outputs then have mean 0 and standard deviation `scale` on that batch.

#include <cstdint>

#include "nn/module.h"

namespace normgrad::nn {

// w = g v / sqrt(sum(v_i^2) + eps) per row i of v (all dims after the first), through the
// fused L2-norm kernel and its backward. g has shape [v.size(0)].
Tensor weight_norm(const Tensor& v, const Tensor& g, double eps = 0);

struct WeightNormOptions {
  double eps = 0;  // added to ||v_i||^2; 0, as in the paper, since v is never all zeros
};

class WeightNorm : public Module {
 public:
  Tensor direction;  // v, the weight's shape
  Tensor gain;       // g, [out]

  // Reparameterises `weight` (at least 1-d, [out, ...]): v starts as a copy of it and g as
  // the norms of its rows, so weight() returns `weight` until training changes them.
  explicit WeightNorm(const Tensor& weight, WeightNormOptions options = {});
  std::string type_name() const override { return "WeightNorm"; }

  Tensor weight() const;  // g v / ||v||, differentiable in v and g
  // Starts again from `weight` (the shape of direction): v = weight, g = its row norms, as the
  // constructor does. For a model's own initialisation scheme after construction.
  void reset(const Tensor& weight);

  // outputs: the layer's outputs for one batch, computed with this weight and no bias, with
  // one unit per index of `unit_dim` ([N, out] or [N, out, H, W] with unit_dim 1). Rescales g
  // so that each unit's outputs get standard deviation `scale`, and returns the bias [out]
  // that makes their mean 0. No gradient is recorded.
  Tensor init_from_data(const Tensor& outputs, std::int64_t unit_dim = 1, double scale = 1.0);

 private:
  WeightNormOptions options_;
};

}  // namespace normgrad::nn
