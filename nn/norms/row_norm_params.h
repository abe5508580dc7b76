#pragma once
// The backend's NormParams for a row norm over rows of n values, shared by the fused norm ops
// (fused.cpp) and the normed GRU step (recurrent_functional.cpp). Internal to nn/.

#include <cstdint>

#include "backends/backend.h"
#include "nn/norms/fused.h"

namespace normgrad::nn {

// k: the leading values that give a MeanSquare statistic (0: all n). Not per channel.
backend::NormParams kernel_params(RowStatistic statistic, std::int64_t k, std::int64_t n,
                                  const NormOptions& options);

}  // namespace normgrad::nn
