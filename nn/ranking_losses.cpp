#include "nn/ranking_losses.h"

#include "autograd/ops.h"
#include "base/error.h"

namespace normgrad::nn {

Tensor order_violations(const Tensor& captions, const Tensor& images) {
  NG_CHECK(captions.defined() && images.defined() && captions.dim() == 2 && images.dim() == 2 &&
               captions.size(1) == images.size(1),
           "order_violations", "captions [N, D] and images [M, D] must agree in D, got ",
           captions.defined() ? captions.shape() : Shape{}, " and ",
           images.defined() ? images.shape() : Shape{});
  // [N, 1, D] - [1, M, D]: every pair's difference, then the squared positive part summed.
  return sum(square(relu(captions.unsqueeze(1) - images.unsqueeze(0))), {2});
}

Tensor contrastive_hinge_loss(const Tensor& errors, double margin) {
  NG_CHECK(errors.defined() && errors.dim() == 2 && errors.size(0) == errors.size(1) &&
               errors.size(0) >= 1,
           "contrastive_hinge_loss", "errors must be a square [N, N] matrix, got ",
           errors.defined() ? errors.shape() : Shape{});
  NG_CHECK(margin >= 0, "contrastive_hinge_loss", "the margin must be non-negative, got ", margin);
  const std::int64_t n = errors.size(0);
  const Tensor rows =
      arange(static_cast<double>(n), {.dtype = DType::Int64, .device = errors.device()});
  const Tensor right = gather(errors, 1, rows.unsqueeze(1));  // [N, 1]: E[n][n]
  const Tensor off_diagonal = ne(rows.unsqueeze(1), rows.unsqueeze(0)).to(errors.dtype());
  // [N, N] against right.T: each column m's right pair (wrong captions of image m); against
  // right: each row n's (wrong images of caption n).
  const Tensor wrong_captions = relu(margin - errors + right.view({1, n}));
  const Tensor wrong_images = relu(margin - errors + right);
  return sum((wrong_captions + wrong_images) * off_diagonal);
}

}  // namespace normgrad::nn
