#pragma once
// The checks and output size shared by conv2d and the pooling ops: a window of `kernel` taps
// spaced `dilation` apart, moved by `stride` over an [N, C, H, W] image padded by `padding`
// on each side. Along one dim the window spans dilation (kernel - 1) + 1 pixels and there are
//   out = (size + 2 padding - span) / stride + 1    (floor division)
// positions, which needs span <= size + 2 padding.

#include "autograd/ops.h"
#include "backends/backend.h"

namespace normgrad::autograd {

struct WindowPlan {
  backend::Window2d window;
  std::int64_t out_h = 0, out_w = 0;
};

// Throws normgrad::Error naming `op` unless x is a defined floating-point [N, C, H, W] tensor.
void check_image(const Tensor& x, const char* op);

// Throws unless kernel, stride and dilation are positive, padding is non-negative and the
// window fits the padded image.
WindowPlan plan_window(const Tensor& x, Size2d kernel, Size2d stride, Size2d padding,
                       Size2d dilation, const char* op);

}  // namespace normgrad::autograd
