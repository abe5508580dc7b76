#include "autograd/functions/cross_entropy.h"

#include "autograd/record.h"
#include "backends/backend.h"
#include "core/tensor_internal.h"

namespace normgrad {

Tensor cross_entropy_rows(const Tensor& logits, const Tensor& targets, std::int64_t ignore_index,
                          double label_smoothing) {
  const std::int64_t rows = targets.numel();
  const Tensor x = logits.contiguous().detach().view({rows, logits.size(-1)});
  const Tensor target_rows = targets.contiguous().view({rows});
  Tensor losses = detail::make_tensor({rows}, logits.dtype(), logits.device());
  Tensor log_normaliser = detail::make_tensor({rows}, logits.dtype(), logits.device());
  const backend::CrossEntropyParams params{.ignore_index = ignore_index,
                                           .label_smoothing = label_smoothing};
  if (rows > 0)
    detail::backend_of(logits).cross_entropy_forward(params, detail::ref(losses),
                                                     detail::ref(log_normaliser), detail::ref(x),
                                                     detail::ref(target_rows));
  if (autograd::needs_grad(logits))
    autograd::record(
        "CrossEntropyBackward", losses, {logits}, {x, target_rows, log_normaliser},
        [params, shape = logits.shape()](const Tensor& dloss, const autograd::SavedTensors& s) {
          // dlogits = (p - q) dloss, row by row
          autograd::Grads grads(1);
          grads[0] = detail::make_tensor(shape, dloss.dtype(), dloss.device());
          if (s[0].numel() == 0) return grads;
          const Tensor upstream = dloss.contiguous();
          detail::backend_of(dloss).cross_entropy_backward(
              params, detail::ref(grads[0].view(s[0].shape())), detail::ref(upstream), detail::ref(s[0]),
              detail::ref(s[1]), detail::ref(s[2]));
          return grads;
        });
  return losses.view(targets.shape());
}

}  // namespace normgrad
