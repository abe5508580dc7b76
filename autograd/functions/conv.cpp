// conv2d and its backward. The forward product and the weight gradient are the backend's
// (backend.h: conv2d, conv2d_weight_gradient): with the weight as W [O, K], K = C kh kw taps,
// each sample's im2col columns X[n] ([K, L], L = OH OW outputs) and dY[n] = dy[n] as [O, L],
//   y[n] = W X[n] (+ b),   dW = sum over n of dY[n] X[n]^T,   db = sum of dy over n, oh, ow,
//   dx[n] = col2im(W^T dY[n])   (col2im adds up the taps that saw a pixel).
// With stride 1, dx is itself a convolution, of dy with the weight turned around: the pixel
// at h met output oh through tap i where oh = h + padding - i dilation, so dx sums
// dy[o, h + padding - i dilation] W[o, c, i, j] over o, i and j, which is conv2d of dy,
// padded by dilation (kh - 1) - padding, with W'[c, o, i', j'] = W[o, c, kh - 1 - i', kw - 1 -
// j'] (channels swapped, taps reversed). That runs the backend's convolution once more instead
// of writing out W^T dY and scattering it back, as long as the new padding is not negative.
//
// Otherwise dx goes through col2im, a chunk of samples n0 .. n0 + m at a time: dY side by side
// ([O, m L], a copy of the chunk of dy), one GEMM W^T dY ([K, m L]) a chunk rather than m thin
// ones (L = 36 in the CIFAR model's head), and col2im of each sample's part. The columns are
// kh kw times the size of the chunk's images: chunks are sized as conv_by_columns.h sizes its
// own. For bfloat16, the GEMM keeps its float32 sums and col2im adds them in float32 into a
// float32 chunk of dx, which is then rounded once, so dx is rounded once, as the stride-1 path's
// convolution rounds it.

#include <algorithm>

#include "autograd/functions/window2d.h"
#include "autograd/ops.h"
#include "autograd/primitives.h"
#include "autograd/record.h"
#include "backends/conv_by_columns.h"
#include "base/error.h"
#include "core/tensor_internal.h"

namespace normgrad {

using autograd::Grads;
using autograd::SavedTensors;
namespace primitive = autograd::primitive;

namespace {

constexpr const char* op_name = "conv2d";

// [rows, m, L] as the matrix [rows, m L].
Tensor side_by_side(const Tensor& chunked) {
  return chunked.view({chunked.size(0), chunked.size(1) * chunked.size(2)});
}

// dY [O, m, L] of samples [first, first + count) of dy [N, O, L]; a chunk of one sample is
// dy[n] itself.
Tensor rows_of(const Tensor& grad, std::int64_t first, std::int64_t count) {
  if (count == 1) return grad.select(0, first).view({grad.size(1), 1, grad.size(2)});
  Tensor rows =
      detail::make_tensor({grad.size(1), count, grad.size(2)}, grad.dtype(), grad.device());
  detail::backend_of(grad).copy(detail::ref(rows.permute({1, 0, 2})),
                                detail::ref(grad.narrow(0, first, count)));
  return rows;
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

// With stride 1, dx as the convolution of dy with the weight turned around (see the top of
// the file); any stride, col2im of W^T dY a chunk of samples at a time.
Tensor input_gradient(const Tensor& dy, const Tensor& image, const Tensor& weight,
                      const autograd::WindowPlan& plan) {
  const backend::Window2d& w = plan.window;
  const std::int64_t pad_h = w.dilation_h * (w.kernel_h - 1) - w.padding_h;
  const std::int64_t pad_w = w.dilation_w * (w.kernel_w - 1) - w.padding_w;
  backend::Backend& kernels = detail::backend_of(dy);
  const std::int64_t o = weight.size(0), c = weight.size(1), taps = w.kernel_h * w.kernel_w;
  if (dy.numel() == 0) return zeros(image.shape(), {.dtype = dy.dtype(), .device = dy.device()});
  Tensor dx = detail::make_tensor(image.shape(), dy.dtype(), dy.device());
  if (dx.numel() == 0) return dx;
  if (w.stride_h == 1 && w.stride_w == 1 && pad_h >= 0 && pad_w >= 0) {
    const Tensor reversed = arange(static_cast<double>(taps - 1), -1, -1,
                                   {.dtype = DType::Int64, .device = dy.device()});
    const Tensor turned = index_select(weight.view({o, c, taps}), 2, reversed)
                              .permute({1, 0, 2})
                              .contiguous()
                              .view({c, o, w.kernel_h, w.kernel_w});
    backend::Window2d transposed = w;
    transposed.padding_h = pad_h;
    transposed.padding_w = pad_w;
    kernels.conv2d(detail::ref(dx), detail::ref(dy), detail::ref(turned), nullptr, transposed);
    return dx;
  }
  const std::int64_t positions = plan.out_h * plan.out_w, k = c * taps;
  const Tensor grad = dy.view({dy.size(0), o, positions});
  const Tensor matrix_w = weight.view({o, k});
  const std::int64_t chunk = backend::conv_chunk_samples(k, positions, dy.size(0));
  const DType sums = compute_dtype(dy.dtype());  // float32 for bfloat16
  const bool widens = sums != dx.dtype();
  for (std::int64_t first = 0; first < dy.size(0); first += chunk) {
    const std::int64_t count = std::min(chunk, dy.size(0) - first);
    const Tensor grad_rows = rows_of(grad, first, count);
    Tensor grad_columns = detail::make_tensor({k, count, positions}, sums, dy.device());
    kernels.matmul(detail::ref(side_by_side(grad_columns)), detail::ref(matrix_w.t()),
                   detail::ref(side_by_side(grad_rows)), false);
    const Tensor pixels = dx.narrow(0, first, count);
    const Tensor summed = widens ? detail::make_tensor(pixels.shape(), sums, dy.device()) : pixels;
    kernels.col2im(detail::ref(summed), detail::ref(grad_columns.permute({1, 0, 2})), w);
    if (widens) kernels.copy(detail::ref(pixels), detail::ref(summed));
  }
  return dx;
}

}  // namespace

Tensor conv2d(const Tensor& x, const Tensor& weight, const Tensor& bias, Size2d stride,
              Size2d padding, Size2d dilation) {
  check_conv_operands(x, weight, bias);
  const autograd::WindowPlan plan = autograd::plan_window(x, Size2d(weight.size(2), weight.size(3)),
                                                          stride, padding, dilation, op_name);
  const std::int64_t batch = x.size(0), out_channels = weight.size(0);
  const Tensor input = x.contiguous().detach();
  const Tensor kernel = weight.detach().contiguous();
  Tensor y =
      detail::make_tensor({batch, out_channels, plan.out_h, plan.out_w}, x.dtype(), x.device());
  if (y.numel() > 0) {
    const Tensor b = bias.defined() ? bias.detach().contiguous() : Tensor();
    const backend::TensorRef bias_ref = b.defined() ? detail::ref(b) : backend::TensorRef{};
    detail::backend_of(x).conv2d(detail::ref(y), detail::ref(input), detail::ref(kernel),
                                 b.defined() ? &bias_ref : nullptr, plan.window);
  }

  if (autograd::needs_grad(x, weight, bias))
    autograd::record("Conv2dBackward", y, {x, weight, bias}, {input, kernel},
                     [plan, need_x = x.requires_grad(), need_weight = weight.requires_grad(),
                      need_bias = bias.defined() && bias.requires_grad()](const Tensor& dy,
                                                                          const SavedTensors& s) {
                       Grads grads(3);
                       const Tensor grad = dy.contiguous();
                       if (need_x) grads[0] = input_gradient(grad, s[0], s[1], plan);
                       if (need_weight) {
                         grads[1] = detail::make_tensor(s[1].shape(), dy.dtype(), dy.device());
                         detail::backend_of(dy).conv2d_weight_gradient(
                             detail::ref(grads[1]), detail::ref(s[0]), detail::ref(grad),
                             plan.window);
                       }
                       if (need_bias) grads[2] = dy.detach().sum({0, 2, 3});
                       return grads;
                     });
  return y;
}

}  // namespace normgrad
