#pragma once
// The fused normalisers: one backend kernel forward, one backward (backends/backend.h,
// norm_forward / norm_backward). Same formulas and options as their composed twins in
// composed.h, which the tests hold them to.
//
// The trailing `normalized_dims` dims of x form one group. gain and bias (each optional:
// pass an undefined Tensor) have the shape of those trailing dims — or, in the spatial form
// (`per_channel`), x is [N, C, H, W], the groups are the H x W maps of each (sample,
// channel), and gain and bias have shape [C].

#include <cstdint>

#include "core/tensor.h"
#include "nn/norms/composed.h"

namespace normgrad::nn {

struct NormOptions {
  double eps = 1e-5;
  EpsPlacement placement = EpsPlacement::InsideSqrt;  // the RMS family only
  bool per_channel = false;                            // the spatial form of a CNN
};

Tensor layer_norm(const Tensor& x, std::int64_t normalized_dims, const Tensor& gain,
                  const Tensor& bias, NormOptions options = {});
Tensor rms_norm(const Tensor& x, std::int64_t normalized_dims, const Tensor& gain,
                const Tensor& bias, NormOptions options = {});
// The statistic comes from the first k values of each (flattened) group.
Tensor partial_rms_norm(const Tensor& x, std::int64_t normalized_dims, std::int64_t k,
                        const Tensor& gain, const Tensor& bias, NormOptions options = {});
Tensor l2_norm(const Tensor& x, std::int64_t normalized_dims, const Tensor& gain,
               const Tensor& bias, NormOptions options = {});

}  // namespace normgrad::nn
