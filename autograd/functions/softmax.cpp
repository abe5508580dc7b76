// softmax and log_softmax along one dim, fused in the backend (max-subtracted, so no
// overflow). Backward, with y the forward output and s = sum over the dim:
//   softmax:      dx = y (dy - s(dy y))
//   log_softmax:  dx = dy - e^y s(dy)

#include "autograd/ops.h"
#include "autograd/primitives.h"
#include "autograd/record.h"
#include "core/tensor_internal.h"

namespace normgrad {

using autograd::Grads;
using autograd::needs_grad;
using autograd::record;
using autograd::SavedTensors;

namespace {

Tensor softmax_family(const Tensor& x, std::int64_t dim, bool log, const char* name) {
  autograd::primitive::check_floating(x, name);
  const int d = wrap_dim(dim, x.dim(), name);
  Tensor y = detail::make_tensor(x.shape(), x.dtype(), x.device());
  if (y.numel() == 0) return y;
  const Tensor input = x.dim() == 0 ? x.reshape({1}) : x;
  const Tensor output = x.dim() == 0 ? y.reshape({1}) : y;
  detail::backend_of(x).softmax(detail::ref(output), detail::ref(input), d, log);
  if (needs_grad(x))
    record(log ? "LogSoftmaxBackward" : "SoftmaxBackward", y, {x}, {y},
           [d, log](const Tensor& dy, const SavedTensors& s) {
             const Tensor& out = s[0];
             Tensor dx = detail::make_tensor(out.shape(), out.dtype(), out.device());
             const Tensor dy_ = out.dim() == 0 ? dy.reshape({1}) : dy;
             const Tensor y_ = out.dim() == 0 ? out.reshape({1}) : out;
             const Tensor dx_ = out.dim() == 0 ? dx.reshape({1}) : dx;
             detail::backend_of(dx).softmax_backward(detail::ref(dx_), detail::ref(dy_),
                                                     detail::ref(y_), d, log);
             return Grads{dx};
           });
  return y;
}

}  // namespace

Tensor softmax(const Tensor& x, std::int64_t dim) {
  return softmax_family(x, dim, false, "softmax");
}

Tensor log_softmax(const Tensor& x, std::int64_t dim) {
  return softmax_family(x, dim, true, "log_softmax");
}

}  // namespace normgrad
