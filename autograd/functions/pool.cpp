// Pooling over [N, C, H, W] images. Forward and backward are backend kernels (pool.cpp of
// each backend):
//   max: y = the window's largest value, at the saved int64 index p*; dx[p*] += dy
//   avg: y = sum(window) / (kh kw), zeros in the padding; every pixel of the window gets
//        dy / (kh kw)
// global_avg_pool2d is a mean over H and W, composed from mean.

#include "autograd/functions/window2d.h"
#include "autograd/ops.h"
#include "autograd/primitives.h"
#include "autograd/record.h"
#include "base/error.h"
#include "core/tensor_internal.h"

namespace normgrad {

using autograd::Grads;
using autograd::SavedTensors;

namespace {

// Checks the pooling arguments; PyTorch's rule that padding is at most half the kernel keeps
// every window partly inside the image.
autograd::WindowPlan plan_pool(const Tensor& x, Size2d kernel, std::optional<Size2d> stride,
                               Size2d padding, const char* op) {
  autograd::check_image(x, op);
  NG_CHECK(padding.h <= kernel.h / 2 && padding.w <= kernel.w / 2, op,
           "padding must be at most half the kernel, got padding [", padding.h, ", ", padding.w,
           "] for kernel [", kernel.h, ", ", kernel.w, "]");
  return autograd::plan_window(x, kernel, stride.value_or(kernel), padding, 1, op);
}

Tensor pooled_like(const Tensor& x, const autograd::WindowPlan& plan, DType dtype) {
  return detail::make_tensor({x.size(0), x.size(1), plan.out_h, plan.out_w}, dtype, x.device());
}

}  // namespace

Tensor max_pool2d(const Tensor& x, Size2d kernel, std::optional<Size2d> stride, Size2d padding) {
  const autograd::WindowPlan plan = plan_pool(x, kernel, stride, padding, "max_pool2d");
  const Tensor input = x.contiguous().detach();
  Tensor y = pooled_like(x, plan, x.dtype());
  Tensor indices = pooled_like(x, plan, DType::Int64);
  if (y.numel() > 0)
    detail::backend_of(x).max_pool2d(detail::ref(y), detail::ref(indices), detail::ref(input),
                                     plan.window);
  if (autograd::needs_grad(x))
    autograd::record("MaxPool2dBackward", y, {x}, {indices},
                     [shape = x.shape()](const Tensor& dy, const SavedTensors& s) {
                       Tensor dx = detail::make_tensor(shape, dy.dtype(), dy.device());
                       if (dx.numel() > 0)
                         detail::backend_of(dy).max_pool2d_backward(
                             detail::ref(dx), detail::ref(dy.contiguous()), detail::ref(s[0]));
                       return Grads{dx};
                     });
  return y;
}

Tensor avg_pool2d(const Tensor& x, Size2d kernel, std::optional<Size2d> stride, Size2d padding) {
  const autograd::WindowPlan plan = plan_pool(x, kernel, stride, padding, "avg_pool2d");
  const Tensor input = x.contiguous().detach();
  Tensor y = pooled_like(x, plan, x.dtype());
  if (y.numel() > 0)
    detail::backend_of(x).avg_pool2d(detail::ref(y), detail::ref(input), plan.window);
  if (autograd::needs_grad(x))
    autograd::record("AvgPool2dBackward", y, {x}, {},
                     [shape = x.shape(), plan](const Tensor& dy, const SavedTensors&) {
                       Tensor dx = detail::make_tensor(shape, dy.dtype(), dy.device());
                       if (dx.numel() > 0)
                         detail::backend_of(dy).avg_pool2d_backward(
                             detail::ref(dx), detail::ref(dy.contiguous()), plan.window);
                       return Grads{dx};
                     });
  return y;
}

Tensor global_avg_pool2d(const Tensor& x) {
  autograd::check_image(x, "global_avg_pool2d");
  return mean(x, {2, 3});
}

}  // namespace normgrad
