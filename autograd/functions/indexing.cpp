// Indexing by int64 index tensors. index_select and gather read; their backward passes
// write the gradient back with the matching deterministic accumulations (index_add and
// scatter_add), so repeated indices add up.

#include "autograd/ops.h"
#include "autograd/primitives.h"
#include "autograd/record.h"
#include "base/error.h"
#include "core/cuda.h"
#include "core/tensor_internal.h"

namespace normgrad {

using autograd::Grads;
using autograd::needs_grad;
using autograd::record;
using autograd::SavedTensors;
namespace primitive = autograd::primitive;

namespace {

void check_index(const Tensor& index, const Tensor& x, const char* name) {
  primitive::check_defined(index, name);
  NG_CHECK(index.dtype() == DType::Int64, name, "indices must be int64, got ", index.dtype());
  primitive::check_same_device(x, index, name);
}

// Every index must lie in [0, size).
// Left out while a CUDA graph is captured: nothing runs then, so there is nothing to read
// (core/cuda.h's Graph: a captured step trusts its indices).
void check_range(const Tensor& index, std::int64_t size, int dim, const char* name) {
  if (index.numel() == 0) return;
  if (index.device().is_cuda() && cuda::is_capturing(index.device().index)) return;
  const std::uint64_t all = primitive::reduction_mask({}, index.dim(), name);
  // Both extremes read back in one copy: on a GPU, one wait for the device rather than two.
  const std::vector<std::int64_t> extremes =
      cat({primitive::reduce(backend::ReduceOp::Min, index, all, 1, name).reshape({1}),
           primitive::reduce(backend::ReduceOp::Max, index, all, 1, name).reshape({1})})
          .to(Device::cpu())
          .to_vector<std::int64_t>();
  const std::int64_t lowest = extremes[0], highest = extremes[1];
  NG_CHECK(lowest >= 0 && highest < size, name, "index ", lowest < 0 ? lowest : highest,
           " is out of range for dim ", dim, " of size ", size);
}

Tensor zeros_shaped(const Shape& shape, const Tensor& like) {
  return zeros(shape, {.dtype = like.dtype(), .device = like.device()});
}

}  // namespace

Tensor index_select(const Tensor& x, std::int64_t dim, const Tensor& index) {
  primitive::check_defined(x, "index_select");
  check_index(index, x, "index_select");
  NG_CHECK(index.dim() == 1, "index_select", "index must be 1-d, got shape ", index.shape());
  NG_CHECK(x.dim() > 0, "index_select", "cannot index a 0-d tensor");
  const int d = wrap_dim(dim, x.dim(), "index_select");
  check_range(index, x.shape()[d], d, "index_select");
  Shape shape = x.shape();
  shape[d] = index.numel();
  Tensor y = detail::make_tensor(shape, x.dtype(), x.device());
  if (y.numel() > 0)
    detail::backend_of(y).index_select(detail::ref(y), detail::ref(x), d, detail::ref(index));
  if (needs_grad(x))  // dx[index[i]] += dy[i] along dim
    record("IndexSelectBackward", y, {x}, {index},
           [d, shape = x.shape()](const Tensor& dy, const SavedTensors& s) {
             Tensor dx = zeros_shaped(shape, dy);
             if (dy.numel() > 0)
               detail::backend_of(dx).index_add(detail::ref(dx), d, detail::ref(s[0]),
                                                detail::ref(dy));
             return Grads{dx};
           });
  return y;
}

Tensor gather(const Tensor& x, std::int64_t dim, const Tensor& index) {
  primitive::check_defined(x, "gather");
  check_index(index, x, "gather");
  NG_CHECK(index.dim() == x.dim(), "gather", "index must have the input's rank ", x.dim(),
           ", got shape ", index.shape());
  const int d = wrap_dim(dim, x.dim(), "gather");
  for (std::int64_t k = 0; k < x.dim(); ++k)
    NG_CHECK(k == d || index.shape()[k] <= x.shape()[k], "gather", "index shape ",
             index.shape(), " exceeds the input's shape ", x.shape(), " in dim ", k);
  check_range(index, x.dim() ? x.shape()[d] : 1, d, "gather");
  Tensor y = detail::make_tensor(index.shape(), x.dtype(), x.device());
  if (y.numel() > 0)
    detail::backend_of(y).gather(detail::ref(y), detail::ref(x), d, detail::ref(index));
  if (needs_grad(x))  // dx[.., index[..], ..] += dy[..]
    record("GatherBackward", y, {x}, {index},
           [d, shape = x.shape()](const Tensor& dy, const SavedTensors& s) {
             return Grads{scatter_add(zeros_shaped(shape, dy), d, s[0], dy)};
           });
  return y;
}

Tensor scatter_add(const Tensor& x, std::int64_t dim, const Tensor& index, const Tensor& src) {
  primitive::check_defined(x, "scatter_add");
  primitive::check_defined(src, "scatter_add");
  check_index(index, x, "scatter_add");
  primitive::check_same_dtype(x, src, "scatter_add");
  primitive::check_same_device(x, src, "scatter_add");
  NG_CHECK(index.dim() == x.dim() && src.dim() == x.dim(), "scatter_add",
           "input, index and src need the same rank, got shapes ", x.shape(), ", ",
           index.shape(), " and ", src.shape());
  const int d = wrap_dim(dim, x.dim(), "scatter_add");
  for (std::int64_t k = 0; k < x.dim(); ++k)
    NG_CHECK(index.shape()[k] <= src.shape()[k] && (k == d || index.shape()[k] <= x.shape()[k]),
             "scatter_add", "index shape ", index.shape(), " exceeds src ", src.shape(),
             " or input ", x.shape(), " in dim ", k);
  check_range(index, x.dim() ? x.shape()[d] : 1, d, "scatter_add");
  Tensor y = x.detach().clone();
  if (index.numel() > 0) {
    // The kernel reads src over the index's extent.
    std::vector<std::int64_t> window(index.shape().begin(), index.shape().end());
    Tensor src_window = src;
    for (std::int64_t k = 0; k < src.dim(); ++k)
      if (src_window.shape()[k] != window[k]) src_window = src_window.detach().narrow(k, 0, window[k]);
    detail::backend_of(y).scatter_add(detail::ref(y), d, detail::ref(index),
                                      detail::ref(src_window));
  }
  if (needs_grad(x, src))  // dx = dy; dsrc = dy gathered at index (0 outside its extent)
    record("ScatterAddBackward", y, {x, src}, {index},
           [d, src_shape = src.shape()](const Tensor& dy, const SavedTensors& s) {
             Tensor picked = gather(dy, d, s[0]);
             Tensor dsrc = picked;
             if (picked.shape() != src_shape) {
               dsrc = zeros_shaped(src_shape, dy);
               Tensor window = dsrc;
               for (std::size_t k = 0; k < src_shape.size(); ++k)
                 window = window.narrow(static_cast<std::int64_t>(k), 0, picked.shape()[k]);
               detail::copy_values(window, picked);
             }
             return Grads{dy, dsrc};
           });
  return y;
}

Tensor embedding(const Tensor& weight, const Tensor& indices) {
  primitive::check_floating(weight, "embedding");
  NG_CHECK(weight.dim() == 2, "embedding", "weight must be 2-d [num_embeddings, dim], got ",
           weight.shape());
  check_index(indices, weight, "embedding");
  Shape shape = indices.shape();
  shape.push_back(weight.shape()[1]);
  return index_select(weight, 0, indices.reshape({-1})).view(shape);
}

}  // namespace normgrad
