#pragma once
// What the norm modules share: checking an input against the module's normalised shape.

#include "core/error.h"
#include "core/tensor.h"

namespace normgrad::nn::detail {

// The number of trailing dims to normalise, after checking that x ends in normalized_shape
// (or, per channel, that x is [N, C, H, W] with C = normalized_shape[0]).
inline std::int64_t normalized_dims_for(const Tensor& x, const Shape& normalized_shape,
                                        bool per_channel, const char* module) {
  NG_CHECK(x.defined(), module, "the input is undefined");
  if (per_channel) {
    NG_CHECK(x.dim() == 4 && x.size(1) == normalized_shape[0], module,
             "expects feature maps [N, ", normalized_shape[0], ", H, W], got ", x.shape());
    return 2;
  }
  const auto rank = static_cast<std::int64_t>(normalized_shape.size());
  const bool matches =
      x.dim() >= rank && Shape(x.shape().end() - rank, x.shape().end()) == normalized_shape;
  NG_CHECK(matches, module, "expects an input ending in ", normalized_shape, ", got ", x.shape());
  return rank;
}

inline void check_normalized_shape(const Shape& normalized_shape, bool per_channel,
                                   const char* module) {
  NG_CHECK(!normalized_shape.empty() && numel(normalized_shape) > 0, module,
           "normalized_shape must be non-empty, got ", normalized_shape);
  NG_CHECK(!per_channel || normalized_shape.size() == 1, module,
           "the per-channel form takes normalized_shape = {channels}, got ", normalized_shape);
}

}  // namespace normgrad::nn::detail
