#include "autograd/functions/window2d.h"

#include "autograd/primitives.h"
#include "base/error.h"

namespace normgrad::autograd {

void check_image(const Tensor& x, const char* op) {
  primitive::check_floating(x, op);
  NG_CHECK(x.dim() == 4, op, "expects an input [N, C, H, W], got ", x.shape());
}

WindowPlan plan_window(const Tensor& x, Size2d kernel, Size2d stride, Size2d padding,
                       Size2d dilation, const char* op) {
  NG_CHECK(kernel.h > 0 && kernel.w > 0, op, "kernel size must be positive, got [", kernel.h, ", ",
           kernel.w, "]");
  NG_CHECK(stride.h > 0 && stride.w > 0, op, "stride must be positive, got [", stride.h, ", ",
           stride.w, "]");
  NG_CHECK(padding.h >= 0 && padding.w >= 0, op, "padding must be non-negative, got [", padding.h,
           ", ", padding.w, "]");
  NG_CHECK(dilation.h > 0 && dilation.w > 0, op, "dilation must be positive, got [", dilation.h,
           ", ", dilation.w, "]");
  const std::int64_t span_h = dilation.h * (kernel.h - 1) + 1;
  const std::int64_t span_w = dilation.w * (kernel.w - 1) + 1;
  const std::int64_t padded_h = x.size(2) + 2 * padding.h, padded_w = x.size(3) + 2 * padding.w;
  NG_CHECK(span_h <= padded_h && span_w <= padded_w, op, "the kernel [", kernel.h, ", ", kernel.w,
           "] (spanning [", span_h, ", ", span_w, "] with dilation [", dilation.h, ", ", dilation.w,
           "]) is larger than the padded input [", padded_h, ", ", padded_w, "] of the input ",
           x.shape(), " with padding [", padding.h, ", ", padding.w, "]");
  WindowPlan plan;
  plan.window = {kernel.h,  kernel.w,  stride.h,   stride.w,
                 padding.h, padding.w, dilation.h, dilation.w};
  plan.out_h = plan.window.output_height(x.size(2));
  plan.out_w = plan.window.output_width(x.size(3));
  return plan;
}

}  // namespace normgrad::autograd
