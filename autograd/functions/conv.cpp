// conv2d as im2col and GEMMs. With K = C kh kw taps and L = OH OW output positions, the
// columns X[n] = im2col(x[n]) are [K, L] and the weight, flattened, is W [O, K]. A chunk of
// samples n0 .. n0 + m lays its columns side by side, X = [X[n0] .. X[n0 + m - 1]] ([K, m L]),
// so that each product is one GEMM per chunk rather than one per sample:
//   forward:  Y = W X                                ([O, m L]; y[n] = Y[:, n L ..] + b)
//   backward: dY = [dy[n0] .. dy[n0 + m - 1]]        ([O, m L], a copy of the chunk of dy)
//             dW = sum over chunks of dY X^T         (accumulating GEMMs, chunks in order)
//             dX = W^T dY, dx[n] = col2im(dX[:, n L ..])   (col2im adds overlapping taps)
//             db = sum of dy over n, oh, ow
// Per-sample GEMMs are thin where L is small (L = 36 in the CIFAR model's head: a GEMM with
// an inner dimension of 36 for dW) and each one is a fork and join of the BLAS threads; the
// chunk's GEMMs are wide and few. Y is [O, m L], not y's [m, O, L], so it is copied into y,
// with the bias added on the way, which is the pass that adding the bias costs anyway.
// The columns are kh kw times the size of x, so they are made for a chunk of samples at a
// time (at most column_budget values), and backward recomputes them from x rather than
// keeping them alive from forward for every layer of a network.

#include <algorithm>

#include "autograd/functions/window2d.h"
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

// Values in one chunk's columns: 8 Mi (32 MiB in float32). A CIFAR layer with 96 channels
// at 32 x 32 has 0.9 Mi column values per sample, so a batch of 64 is 8 chunks. Each chunk is
// a handful of forks and joins of the threads, which on a machine shared with other
// processes cost far more than their work whenever a thread has lost its core: with 4 Mi, a
// ConvPool-CNN-C step under a load of 5 took 15% longer (within the noise of the 8 Mi one
// on a quiet machine), for 31 MB less resident memory.
constexpr std::int64_t column_budget = std::int64_t{1} << 23;

std::int64_t samples_per_chunk(const autograd::WindowPlan& plan, std::int64_t taps) {
  const std::int64_t per_sample = std::max<std::int64_t>(taps * plan.out_h * plan.out_w, 1);
  return std::max<std::int64_t>(column_budget / per_sample, 1);
}

// im2col of a contiguous [m, C, H, W] image, side by side: [C kh kw, m, OH OW].
Tensor columns_of(const Tensor& image, const autograd::WindowPlan& plan) {
  const backend::Window2d& w = plan.window;
  Tensor columns = detail::make_tensor(
      {image.size(1) * w.kernel_h * w.kernel_w, image.size(0), plan.out_h * plan.out_w},
      image.dtype(), image.device());
  if (columns.numel() > 0)
    detail::backend_of(image).im2col(detail::ref(columns.permute({1, 0, 2})), detail::ref(image),
                                     w);
  return columns;
}

// [rows, m, L] as the matrix [rows, m L].
Tensor side_by_side(const Tensor& chunked) {
  return chunked.view({chunked.size(0), chunked.size(1) * chunked.size(2)});
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

  const std::int64_t chunk = samples_per_chunk(plan, taps);
  const std::int64_t positions = plan.out_h * plan.out_w;
  backend::Backend& device = detail::backend_of(x);
  Tensor y = detail::make_tensor({batch, out_channels, positions}, x.dtype(), x.device());
  if (y.numel() > 0)
    for (std::int64_t first = 0; first < batch; first += chunk) {
      const std::int64_t count = std::min(chunk, batch - first);
      const Tensor columns = columns_of(input.narrow(0, first, count), plan);
      Tensor product = detail::make_tensor({out_channels, count, positions}, x.dtype(), x.device());
      device.matmul(detail::ref(side_by_side(product)), detail::ref(flat_weight),
                    detail::ref(side_by_side(columns)), false);
      // y[n] = Y[:, n L ..] (+ b): [m, O, L] from [O, m, L].
      const Tensor y_chunk = y.narrow(0, first, count), by_sample = product.permute({1, 0, 2});
      if (bias.defined())
        device.binary(
            backend::BinaryOp::Add, detail::ref(y_chunk), detail::ref(by_sample),
            detail::broadcast_ref(bias.detach().view({1, out_channels, 1}), y_chunk.shape()), 0);
      else
        device.copy(detail::ref(y_chunk), detail::ref(by_sample));
    }
  y = y.view({batch, out_channels, plan.out_h, plan.out_w});

  if (autograd::needs_grad(x, weight, bias))
    autograd::record(
        "Conv2dBackward", y, {x, weight, bias}, {input, flat_weight},
        [plan, positions, weight_shape = weight.shape(), need_x = x.requires_grad(),
         need_weight = weight.requires_grad(), need_bias = bias.defined() && bias.requires_grad()](
            const Tensor& dy, const SavedTensors& s) {
          const Tensor& image = s[0];
          const Tensor& w = s[1];  // [O, K]
          const std::int64_t n = image.size(0), o = w.size(0), k = w.size(1);
          const Tensor grad = dy.contiguous().view({n, o, positions});
          backend::Backend& kernels = detail::backend_of(dy);
          Grads grads(3);
          Tensor dw =
              need_weight ? zeros({o, k}, {.dtype = dy.dtype(), .device = dy.device()}) : Tensor();
          // col2im overwrites dx chunk by chunk; zeros only when there is no chunk (O = 0).
          if (need_x)
            grads[0] = grad.numel() > 0
                           ? detail::make_tensor(image.shape(), dy.dtype(), dy.device())
                           : zeros(image.shape(), {.dtype = dy.dtype(), .device = dy.device()});
          const std::int64_t chunk_size = samples_per_chunk(plan, k);
          for (std::int64_t first = 0; first < n && grad.numel() > 0; first += chunk_size) {
            const std::int64_t count = std::min(chunk_size, n - first);
            // dY [O, m, L]; a chunk of one sample is dy[n] itself.
            Tensor grad_rows;
            if (count == 1) {
              grad_rows = grad.select(0, first).view({o, 1, positions});
            } else {
              grad_rows = detail::make_tensor({o, count, positions}, dy.dtype(), dy.device());
              kernels.copy(detail::ref(grad_rows.permute({1, 0, 2})),
                           detail::ref(grad.narrow(0, first, count)));
            }
            if (need_weight) {
              const Tensor columns = columns_of(image.narrow(0, first, count), plan);
              kernels.matmul(detail::ref(dw), detail::ref(side_by_side(grad_rows)),
                             detail::ref(side_by_side(columns).t()), true);
            }
            if (need_x) {
              Tensor grad_columns =
                  detail::make_tensor({k, count, positions}, dy.dtype(), dy.device());
              kernels.matmul(detail::ref(side_by_side(grad_columns)), detail::ref(w.t()),
                             detail::ref(side_by_side(grad_rows)), false);
              kernels.col2im(detail::ref(grads[0].narrow(0, first, count)),
                             detail::ref(grad_columns.permute({1, 0, 2})), plan.window);
            }
          }
          if (need_weight) grads[1] = dw.view(weight_shape);
          if (need_bias) grads[2] = dy.detach().sum({0, 2, 3});
          return grads;
        });
  return y;
}

}  // namespace normgrad
