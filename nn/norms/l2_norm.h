#pragma once
// L2Norm as a module: the paper's Table 2 baseline, RMSNorm with the root mean square
// replaced by the Euclidean norm, y = g x / sqrt(sum(x^2) + eps) (+ b). Since
// ||x|| = sqrt(n) RMS(x), its outputs are sqrt(n) times smaller than RMSNorm's at the same
// gain, which is why the paper found it trains worse.

#include "autograd/functions/norm.h"
#include "nn/norms/affine_norm.h"

namespace normgrad::nn {

struct L2NormOptions {
  double eps = 1e-5;
  bool gain = true;
  bool bias = false;
  bool per_channel = false;
  DType dtype = DType::Float32;
};

class L2Norm : public AffineNorm {
 public:
  explicit L2Norm(Shape normalized_shape, L2NormOptions options = {});
  std::string type_name() const override { return "L2Norm"; }
  Tensor forward(const Tensor& x) override;
  std::optional<RowNorm> row_form() const override;

 private:
  L2NormOptions options_;
};

}  // namespace normgrad::nn
