// The norm family's differentiable ops: argument checks, the [rows, n] view the kernels want
// (strided rows read in place), the forward kernel, and right below it the backward node that
// hands dy to the backward kernel. The formulas of both passes, the backward's derivation
// included, are the backend's contract (backends/backend.h, "fused normalisers"); the kernels
// are backends/cpu/norm.cpp and backends/cuda/norm.cu.

#include "autograd/functions/norm.h"

#include "autograd/mixed_precision.h"
#include "autograd/primitives.h"
#include "autograd/record.h"
#include "base/error.h"
#include "core/tensor_internal.h"

namespace normgrad {

namespace {

using autograd::Grads;
using autograd::SavedTensors;

// Checks gain or bias against x and returns it contiguous (or undefined).
Tensor checked_affine(const Tensor& x, const Tensor& parameter, const Shape& expected,
                      const char* what, const char* name) {
  if (!parameter.defined()) return parameter;
  NG_CHECK(parameter.shape() == expected, name, what, " must have shape ", expected, ", got ",
           parameter.shape(), " (input ", x.shape(), ")");
  autograd::primitive::check_same_dtype(x, parameter, name);
  autograd::primitive::check_same_device(x, parameter, name);
  return parameter.contiguous();
}

// t as the [rows, n] the kernels take: a view where its rows are evenly spaced, each row's
// values adjacent (a slice of wider rows, as a recurrent cell's gates are a slice of its
// projection), which the kernels read and write in place; a contiguous copy otherwise.
Tensor as_rows(const Tensor& t, std::int64_t rows, std::int64_t n) {
  const Tensor view = t.reshape({rows, n});  // a copy only where no view can be
  const Strides& strides = view.strides();
  if ((n <= 1 || strides[1] == 1) && (rows <= 1 || strides[0] >= n)) return view;
  return view.contiguous();
}

// k: the leading values that give an RMS statistic (0: all of them).
Tensor fused_norm(const Tensor& x, std::int64_t normalized_dims, RowStatistic statistic,
                  std::int64_t k, const Tensor& gain_parameter, const Tensor& bias_parameter,
                  const NormOptions& options, const char* name, const char* node_name) {
  const Tensor gain_in = in_input_dtype(gain_parameter, x);
  const Tensor bias_in = in_input_dtype(bias_parameter, x);
  backend::NormParams params;
  autograd::primitive::check_floating(x, name);
  Shape affine_shape;
  std::int64_t n = 1;
  if (options.per_channel) {
    NG_CHECK(x.dim() == 4, name, "the per-channel (spatial) form expects [N, C, H, W], got ",
             x.shape());
    NG_CHECK(normalized_dims == 2, name, "the per-channel form normalises the last 2 dims, got ",
             normalized_dims);
    affine_shape = {x.size(1)};
    params.channels = x.size(1);
  } else {
    NG_CHECK(normalized_dims >= 1 && normalized_dims <= x.dim(), name, "cannot normalise the last ",
             normalized_dims, " dims of a tensor of shape ", x.shape());
    affine_shape.assign(x.shape().end() - normalized_dims, x.shape().end());
  }
  for (std::int64_t d = x.dim() - normalized_dims; d < x.dim(); ++d) n *= x.size(d);
  NG_CHECK(n > 0, name, "the normalised group of shape ", x.shape(), " is empty");
  const Tensor gain = checked_affine(x, gain_in, affine_shape, "gain", name);
  const Tensor bias = checked_affine(x, bias_in, affine_shape, "bias", name);
  NG_CHECK(k >= 0 && k <= n, name, "k = ", k, " must lie in [1, ", n, "]");
  NG_CHECK(options.eps >= 0, name, "eps must be non-negative, got ", options.eps);
  const std::int64_t channels = params.channels;
  params = kernel_params(statistic, k, n, options);
  params.channels = channels;

  const std::int64_t rows = x.numel() / n;
  const Tensor input = as_rows(x.detach(), rows, n);
  Tensor y = detail::make_tensor(x.shape(), x.dtype(), x.device());
  // The statistics of bfloat16 rows stay float32, so backward divides by the forward's r.
  const DType statistics_dtype = compute_dtype(x.dtype());
  Tensor mean = detail::make_tensor({rows}, statistics_dtype, x.device());
  Tensor rstd = detail::make_tensor({rows}, statistics_dtype, x.device());
  backend::TensorRef gain_ref, bias_ref;
  if (rows > 0)
    detail::backend_of(x).norm_forward(params, detail::ref(y.detach().view({rows, n})),
                                       detail::ref(mean), detail::ref(rstd), detail::ref(input),
                                       detail::optional_ref(gain, gain_ref),
                                       detail::optional_ref(bias, bias_ref));
  if (autograd::needs_grad(x, gain_in, bias_in))
    autograd::record(
        node_name, y, {x, gain_in, bias_in}, {input, mean, rstd, gain},
        [params, rows, n, affine_shape, shape = x.shape(), want_gain = gain_in.requires_grad(),
         want_bias = bias_in.requires_grad()](const Tensor& dy, const SavedTensors& s) {
          const Tensor& saved_input = s[0];
          const Tensor& saved_gain = s[3];
          Grads grads(3);
          grads[0] = detail::make_tensor(shape, dy.dtype(), dy.device());
          if (want_gain) grads[1] = detail::make_tensor(affine_shape, dy.dtype(), dy.device());
          if (want_bias) grads[2] = detail::make_tensor(affine_shape, dy.dtype(), dy.device());
          if (rows == 0) return grads;
          backend::TensorRef dgain_ref, dbias_ref, saved_gain_ref;
          const Tensor dy_rows = as_rows(dy, rows, n);
          detail::backend_of(dy).norm_backward(
              params, detail::ref(grads[0].view({rows, n})),
              detail::optional_ref(grads[1], dgain_ref), detail::optional_ref(grads[2], dbias_ref),
              detail::ref(dy_rows), detail::ref(saved_input), detail::ref(s[1]), detail::ref(s[2]),
              detail::optional_ref(saved_gain, saved_gain_ref));
          return grads;
        });
  return y;
}

}  // namespace

backend::NormParams kernel_params(RowStatistic statistic, std::int64_t k, std::int64_t n,
                                  const NormOptions& options) {
  backend::NormParams params;
  params.centred = statistic == RowStatistic::Variance;
  params.k = k == 0 ? n : k;
  params.divisor = statistic == RowStatistic::SumOfSquares ? 1.0 : static_cast<double>(params.k);
  params.eps = options.eps;
  params.eps_inside_sqrt = options.placement == EpsPlacement::InsideSqrt;
  return params;
}

Tensor layer_norm(const Tensor& x, std::int64_t normalized_dims, const Tensor& gain,
                  const Tensor& bias, NormOptions options) {
  return fused_norm(x, normalized_dims, RowStatistic::Variance, 0, gain, bias, options,
                    "layer_norm", "LayerNormBackward");
}

Tensor rms_norm(const Tensor& x, std::int64_t normalized_dims, const Tensor& gain,
                const Tensor& bias, NormOptions options) {
  return fused_norm(x, normalized_dims, RowStatistic::MeanSquare, 0, gain, bias, options,
                    "rms_norm", "RMSNormBackward");
}

Tensor partial_rms_norm(const Tensor& x, std::int64_t normalized_dims, std::int64_t k,
                        const Tensor& gain, const Tensor& bias, NormOptions options) {
  NG_CHECK(k >= 1, "partial_rms_norm", "k must be at least 1, got ", k);
  return fused_norm(x, normalized_dims, RowStatistic::MeanSquare, k, gain, bias, options,
                    "partial_rms_norm", "PartialRMSNormBackward");
}

Tensor l2_norm(const Tensor& x, std::int64_t normalized_dims, const Tensor& gain,
               const Tensor& bias, NormOptions options) {
  return fused_norm(x, normalized_dims, RowStatistic::SumOfSquares, 0, gain, bias, options,
                    "l2_norm", "L2NormBackward");
}

Tensor row_norm(const Tensor& x, const RowNorm& norm) {
  NG_CHECK(!norm.options.per_channel, "row_norm", "a row norm is never per channel");
  switch (norm.statistic) {
    case RowStatistic::Variance:
      return layer_norm(x, 1, norm.gain, norm.bias, norm.options);
    case RowStatistic::MeanSquare:
      if (norm.k == 0 || (x.dim() > 0 && norm.k == x.size(-1)))
        return rms_norm(x, 1, norm.gain, norm.bias, norm.options);
      return partial_rms_norm(x, 1, norm.k, norm.gain, norm.bias, norm.options);
    case RowStatistic::SumOfSquares:
      return l2_norm(x, 1, norm.gain, norm.bias, norm.options);
  }
  throw Error("row_norm: unknown statistic");
}

}  // namespace normgrad
