// conv2d as im2col and a GEMM. With K = C kh kw taps and L = OH OW output positions, the
// columns X[n] = im2col(x[n]) are [K, L] and the weight, flattened, is W [O, K]:
//   forward:  y[n] = W X[n] + b                                   ([O, L], one GEMM for the batch)
//   backward: dW = sum_n dy[n] X[n]^T                             (one accumulating GEMM per
//   sample)
//             dx[n] = col2im(W^T dy[n])                           (col2im adds overlapping taps)
//             db = sum of dy over n, oh, ow
// Backward recomputes the columns from x rather than keeping them from forward: they are
// kh kw times the size of x, and a network keeps one set per layer alive until backward.

#include "autograd/functions/window2d.h"
#include "autograd/grad_mode.h"
#include "autograd/ops.h"
#include "autograd/primitives.h"
#include "autograd/record.h"
#include "core/error.h"
#include "core/tensor_internal.h"

namespace normgrad {

using autograd::Grads;
using autograd::SavedTensors;
namespace primitive = autograd::primitive;

namespace {

constexpr const char* op_name = "conv2d";

// im2col of a contiguous [N, C, H, W] image: [N, C kh kw, OH OW].
Tensor columns_of(const Tensor& image, const autograd::WindowPlan& plan) {
  const backend::Window2d& w = plan.window;
  Tensor columns = detail::make_tensor(
      {image.size(0), image.size(1) * w.kernel_h * w.kernel_w, plan.out_h * plan.out_w},
      image.dtype(), image.device());
  if (columns.numel() > 0)
    detail::backend_of(image).im2col(detail::ref(columns), detail::ref(image), w);
  return columns;
}

void check_conv_operands(const Tensor& x, const Tensor& weight, const Tensor& bias) {
  autograd::check_image(x, op_name);
  primitive::check_floating(weight, op_name);
  NG_CHECK(weight.dim() == 4, op_name, "expects a weight [O, C, kh, kw], got ", weight.shape());
  primitive::check_same_dtype(x, weight, op_name);
  primitive::check_same_device(x, weight, op_name);
  NG_CHECK(weight.size(1) == x.size(1), op_name, "the weight ", weight.shape(), " expects ",
           weight.size(1), " input channels, but the input ", x.shape(), " has ", x.size(1));
  if (!bias.defined()) return;
  NG_CHECK(bias.shape() == Shape{weight.size(0)}, op_name, "expects a bias [", weight.size(0),
           "] (one per output channel of the weight ", weight.shape(), "), got ", bias.shape());
  primitive::check_same_dtype(x, bias, op_name);
  primitive::check_same_device(x, bias, op_name);
}

}  // namespace

Tensor conv2d(const Tensor& x, const Tensor& weight, const Tensor& bias, Size2d stride,
              Size2d padding, Size2d dilation) {
  check_conv_operands(x, weight, bias);
  const autograd::WindowPlan plan = autograd::plan_window(x, Size2d(weight.size(2), weight.size(3)),
                                                          stride, padding, dilation, op_name);
  const std::int64_t batch = x.size(0), out_channels = weight.size(0);
  const std::int64_t taps = weight.size(1) * weight.size(2) * weight.size(3);
  const Tensor input = x.contiguous().detach();
  const Tensor flat_weight = weight.detach().reshape({out_channels, taps});

  Tensor y = primitive::matmul(flat_weight, columns_of(input, plan), op_name)
                 .view({batch, out_channels, plan.out_h, plan.out_w});
  if (bias.defined()) {
    NoGradGuard no_grad;
    y.add_(bias.detach().view({1, out_channels, 1, 1}));
  }

  if (autograd::needs_grad(x, weight, bias))
    autograd::record(
        "Conv2dBackward", y, {x, weight, bias}, {input, flat_weight},
        [plan, weight_shape = weight.shape(), need_x = x.requires_grad(),
         need_weight = weight.requires_grad(), need_bias = bias.defined() && bias.requires_grad()](
            const Tensor& dy, const SavedTensors& s) {
          const Tensor& image = s[0];
          const Tensor& w = s[1];  // [O, K]
          const std::int64_t n = image.size(0), o = w.size(0), k = w.size(1);
          const Tensor grad = dy.contiguous().view({n, o, plan.out_h * plan.out_w});
          backend::Backend& device = detail::backend_of(dy);
          Grads grads(3);
          if (need_weight) {
            const Tensor columns = columns_of(image, plan);
            Tensor dw = zeros({o, k}, {.dtype = dy.dtype(), .device = dy.device()});
            for (std::int64_t sample = 0; sample < n; ++sample)
              device.matmul(detail::ref(dw), detail::ref(grad.select(0, sample)),
                            detail::ref(columns.select(0, sample).t()), true);
            grads[1] = dw.view(weight_shape);
          }
          if (need_x) {
            const Tensor grad_columns = primitive::matmul(w.t(), grad, "conv2d backward");
            grads[0] = detail::make_tensor(image.shape(), dy.dtype(), dy.device());
            if (grads[0].numel() > 0)
              device.col2im(detail::ref(grads[0]), detail::ref(grad_columns), plan.window);
          }
          if (need_bias) grads[2] = dy.detach().sum({0, 2, 3});
          return grads;
        });
  return y;
}

}  // namespace normgrad
