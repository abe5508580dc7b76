#include "nn/norms/affine_norm.h"

#include "base/error.h"

namespace normgrad::nn {

AffineNorm::AffineNorm(Shape normalized_shape, bool per_channel, bool with_gain, bool with_bias,
                       DType dtype, const char* module)
    : normalized_shape_(std::move(normalized_shape)), per_channel_(per_channel), module_(module) {
  NG_CHECK(!normalized_shape_.empty() && numel(normalized_shape_) > 0, module_,
           "normalized_shape must be non-empty, got ", normalized_shape_);
  NG_CHECK(!per_channel_ || normalized_shape_.size() == 1, module_,
           "the per-channel form takes normalized_shape = {channels}, got ", normalized_shape_);
  if (with_gain) gain = register_parameter("gain", ones(normalized_shape_, {.dtype = dtype}));
  if (with_bias) bias = register_parameter("bias", zeros(normalized_shape_, {.dtype = dtype}));
}

std::int64_t AffineNorm::normalized_dims(const Tensor& x) const {
  NG_CHECK(x.defined(), module_, "the input is undefined");
  if (per_channel_) {
    NG_CHECK(x.dim() == 4 && x.size(1) == normalized_shape_[0], module_,
             "expects feature maps [N, ", normalized_shape_[0], ", H, W], got ", x.shape());
    return 2;
  }
  const auto rank = static_cast<std::int64_t>(normalized_shape_.size());
  const bool matches =
      x.dim() >= rank && Shape(x.shape().end() - rank, x.shape().end()) == normalized_shape_;
  NG_CHECK(matches, module_, "expects an input ending in ", normalized_shape_, ", got ", x.shape());
  return rank;
}

std::int64_t AffineNorm::group_size(const Tensor& x) const {
  const std::int64_t dims = normalized_dims(x);
  std::int64_t n = 1;
  for (std::int64_t d = x.dim() - dims; d < x.dim(); ++d) n *= x.size(d);
  return n;
}

}  // namespace normgrad::nn
