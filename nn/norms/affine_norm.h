#pragma once
// AffineNorm: what the norm modules share — the normalised shape, the optional gain (init 1)
// and bias (init 0), and the check that an input fits.
//
// Feature form: the input ends in normalized_shape, and gain and bias have that shape.
// Per-channel (spatial) form: the input is [N, C, H, W], normalized_shape is {C}, each
// (sample, channel) map is normalised over H x W, and gain and bias have shape [C].

#include "nn/norms/norm.h"

namespace normgrad::nn {

class AffineNorm : public Norm {
 public:
  Tensor gain;  // undefined when the module has none
  Tensor bias;

  const Shape& normalized_shape() const { return normalized_shape_; }
  bool per_channel() const { return per_channel_; }

 protected:
  AffineNorm(Shape normalized_shape, bool per_channel, bool with_gain, bool with_bias,
             DType dtype, const char* module);
  // How many trailing dims of x form one group, after checking x against the shape.
  std::int64_t normalized_dims(const Tensor& x) const;
  // The number of values in one group of x.
  std::int64_t group_size(const Tensor& x) const;

 private:
  Shape normalized_shape_;
  bool per_channel_;
  const char* module_;
};

}  // namespace normgrad::nn
