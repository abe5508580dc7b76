#include "nn/norms/batch_norm.h"

#include "autograd/mixed_precision.h"
#include "base/error.h"
#include "profiler/recorder.h"

namespace normgrad::nn {

BatchNorm::BatchNorm(std::int64_t num_features, BatchNormOptions options, const char* module,
                     std::int64_t min_rank, std::int64_t max_rank, const char* layout)
    : num_features_(num_features),
      options_(options),
      module_(module),
      min_rank_(min_rank),
      max_rank_(max_rank),
      layout_(layout) {
  NG_CHECK(num_features_ > 0, module_, "num_features must be positive, got ", num_features_);
  NG_CHECK(options_.momentum >= 0 && options_.momentum <= 1, module_,
           "momentum must lie in [0, 1], got ", options_.momentum);
  NG_CHECK(options_.eps >= 0, module_, "eps must be non-negative, got ", options_.eps);
  NG_CHECK(is_floating(options_.dtype), module_, "expects a floating-point dtype, got ",
           options_.dtype);
  const TensorOptions tensor_options{.dtype = options_.dtype};
  if (options_.affine) {
    gain = register_parameter("gain", ones({num_features_}, tensor_options));
    bias = register_parameter("bias", zeros({num_features_}, tensor_options));
  }
  if (options_.track_running_stats) {
    running_mean = register_buffer("running_mean", zeros({num_features_}, tensor_options));
    running_var = register_buffer("running_var", ones({num_features_}, tensor_options));
  }
}

Tensor BatchNorm::forward(const Tensor& x) {
  const profiler::ModuleSpan span(this, "BatchNorm");

  NG_CHECK(x.defined(), module_, "the input is undefined");
  NG_CHECK(x.dim() >= min_rank_ && x.dim() <= max_rank_, module_, "expects an input ", layout_,
           ", got ", x.shape());
  NG_CHECK(x.size(1) == num_features_, module_, "expects ", num_features_,
           " channels in dim 1, got an input of shape ", x.shape());
  NG_CHECK(takes_input_dtype(x.dtype(), options_.dtype), module_, "expects ", options_.dtype,
           options_.dtype == DType::Float32 ? " (or bfloat16)" : "", " input, got ", x.dtype());
  const bool batch_statistics = is_training() || !options_.track_running_stats;
  // In mixed precision the gain and bias are rounded for the op; the running estimates stay in
  // the parameters' dtype.
  return batch_norm(x, in_input_dtype(gain, x), in_input_dtype(bias, x), running_mean, running_var,
                    batch_statistics, options_.momentum, options_.eps);
}

BatchNorm1d::BatchNorm1d(std::int64_t num_features, BatchNormOptions options)
    : BatchNorm(num_features, options, "BatchNorm1d", 2, 3, "[N, C] or [N, C, L]") {}

BatchNorm2d::BatchNorm2d(std::int64_t num_features, BatchNormOptions options)
    : BatchNorm(num_features, options, "BatchNorm2d", 4, 4, "[N, C, H, W]") {}

}  // namespace normgrad::nn
