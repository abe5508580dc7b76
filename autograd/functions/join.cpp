// Joining and splitting along a dim. cat copies each input into its window of the result;
// its backward hands each input the matching window of dy (a view, no copy).
//
// split, chunk and unbind give views of x's windows, whose gradients share one backward
// buffer. (As separate narrow views, each window's gradient would be a zero tensor shaped
// like x with the window copied in, and the engine would add them all up: for a recurrent
// cell's gates, two fills and an add of the whole projection per step.) The graph:
//   x -> token (a 0-d tensor, "SplitBackward") -> window i ("SplitPieceBackward"), each i
// (unbind's nodes are "UnbindBackward" and "UnbindSliceBackward"). A window's backward copies
// its dy into window i of the shared buffer and passes a zero on to the token. The engine runs
// the token's node only after every window's node that a gradient reached, so by then the
// buffer is complete; it hands the buffer to x, zeroing the windows that no gradient reached.

#include <memory>
#include <utility>
#include <vector>

#include "autograd/ops.h"
#include "autograd/primitives.h"
#include "autograd/record.h"
#include "base/checked.h"
#include "base/error.h"
#include "core/tensor_internal.h"

namespace normgrad {

using autograd::Grads;
using autograd::needs_grad;
using autograd::record;
using autograd::SavedTensors;

Tensor cat(const std::vector<Tensor>& tensors, std::int64_t dim) {
  NG_CHECK(!tensors.empty(), "cat", "needs at least one tensor");
  for (const Tensor& t : tensors) autograd::primitive::check_defined(t, "cat");
  const Tensor& first = tensors.front();
  NG_CHECK(first.dim() > 0, "cat", "cannot concatenate 0-d tensors; use stack()");
  const int d = wrap_dim(dim, first.dim(), "cat");
  Shape shape = first.shape();
  shape[d] = 0;
  std::vector<std::int64_t> sizes;
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    const Tensor& t = tensors[i];
    autograd::primitive::check_same_device(first, t, "cat");
    autograd::primitive::check_same_dtype(first, t, "cat");
    bool compatible = t.dim() == first.dim();
    for (std::int64_t k = 0; compatible && k < t.dim(); ++k)
      compatible = k == d || t.shape()[k] == first.shape()[k];
    NG_CHECK(compatible, "cat", "tensor ", i, " has shape ", t.shape(),
             ", which does not match tensor 0's shape ", first.shape(), " outside dim ", d);
    sizes.push_back(t.shape()[d]);
    NG_CHECK(add_fits(shape[d], t.shape()[d], shape[d]), "cat", "dim ", d,
             " of the result would pass the int64 range at tensor ", i, " of shape ", t.shape());
  }
  Tensor y = detail::make_tensor(shape, first.dtype(), first.device(), "cat");
  {
    NoGradGuard no_grad;
    std::int64_t start = 0;
    for (const Tensor& t : tensors) {
      detail::copy_values(y.narrow(d, start, t.shape()[d]), t);
      start += t.shape()[d];
    }
  }
  if (needs_grad(tensors))
    record("CatBackward", y, tensors, {},
           [d, sizes](const Tensor& dy, const SavedTensors&) { return split(dy, sizes, d); });
  return y;
}

Tensor stack(const std::vector<Tensor>& tensors, std::int64_t dim) {
  NG_CHECK(!tensors.empty(), "stack", "needs at least one tensor");
  autograd::primitive::check_defined(tensors.front(), "stack");
  const int d = wrap_dim(dim, tensors.front().dim() + 1, "stack");
  std::vector<Tensor> expanded;
  expanded.reserve(tensors.size());
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    autograd::primitive::check_defined(tensors[i], "stack");
    NG_CHECK(tensors[i].shape() == tensors.front().shape(), "stack", "tensor ", i, " has shape ",
             tensors[i].shape(), " but tensor 0 has shape ", tensors.front().shape());
    expanded.push_back(tensors[i].unsqueeze(d));
  }
  return cat(expanded, d);
}

namespace {

// The gradient of x that its windows fill, window by window, during one backward pass.
struct WindowGradient {
  Tensor sum;                // x's shape; allocated by the first window that gets a gradient
  std::vector<bool> filled;  // which windows have been written
};

Tensor zero_scalar(const Tensor& like) {
  Tensor zero = detail::make_tensor({}, like.dtype(), like.device());
  detail::backend_of(zero).fill(detail::ref(zero), 0);
  return zero;
}

// x's `count` windows, window(t, i) being window i of a tensor shaped like x, as views whose
// gradients meet in one buffer (the graph above).
template <typename Window>
std::vector<Tensor> windows_sharing_gradient(const Tensor& x, std::size_t count, Window window,
                                             const char* token_name, const char* window_name) {
  std::vector<Tensor> windows;
  windows.reserve(count);
  if (!needs_grad(x)) {
    for (std::size_t i = 0; i < count; ++i) windows.push_back(window(x, i));
    return windows;
  }
  auto gradient = std::make_shared<WindowGradient>();
  gradient->filled.assign(count, false);
  const Tensor token = zero_scalar(x);
  record(token_name, token, {x}, {},
         [gradient, window, shape = x.shape()](const Tensor& dtoken, const SavedTensors&) {
           Tensor sum = std::move(gradient->sum);
           if (!sum.defined()) sum = detail::make_tensor(shape, dtoken.dtype(), dtoken.device());
           for (std::size_t i = 0; i < gradient->filled.size(); ++i) {
             if (!gradient->filled[i]) {
               const Tensor empty_window = window(sum, i);
               detail::backend_of(empty_window).fill(detail::ref(empty_window), 0);
             }
             gradient->filled[i] = false;  // ready for another backward pass (retain_graph)
           }
           return Grads{sum};
         });
  for (std::size_t i = 0; i < count; ++i) {
    Tensor piece;
    {
      NoGradGuard no_grad;
      piece = window(x, i);
    }
    record(window_name, piece, {token}, {},
           [gradient, window, i, shape = x.shape()](const Tensor& dy, const SavedTensors&) {
             if (!gradient->sum.defined())
               gradient->sum = detail::make_tensor(shape, dy.dtype(), dy.device());
             detail::copy_values(window(gradient->sum, i), dy);
             gradient->filled[i] = true;
             return Grads{zero_scalar(dy)};
           });
    windows.push_back(piece);
  }
  return windows;
}

}  // namespace

std::vector<Tensor> split(const Tensor& x, const std::vector<std::int64_t>& sizes,
                          std::int64_t dim) {
  autograd::primitive::check_defined(x, "split");
  NG_CHECK(x.dim() > 0, "split", "cannot split a 0-d tensor");
  const int d = wrap_dim(dim, x.dim(), "split");
  std::int64_t total = 0;
  for (std::int64_t size : sizes) {
    NG_CHECK(size >= 0 && add_fits(total, size, total), "split",
             "sizes must be non-negative and add up within int64, got ", Shape(sizes));
  }
  NG_CHECK(total == x.shape()[d], "split", "sizes ", Shape(sizes), " add up to ", total,
           " but dim ", d, " has size ", x.shape()[d]);
  // (start, size) of each piece, shared by every node's copy of the window function.
  auto pieces = std::make_shared<std::vector<std::pair<std::int64_t, std::int64_t>>>();
  std::int64_t start = 0;
  for (std::int64_t size : sizes) {
    pieces->emplace_back(start, size);
    start += size;
  }
  return windows_sharing_gradient(
      x, sizes.size(),
      [d, pieces](const Tensor& t, std::size_t i) {
        return t.narrow(d, (*pieces)[i].first, (*pieces)[i].second);
      },
      "SplitBackward", "SplitPieceBackward");
}

std::vector<Tensor> split(const Tensor& x, std::int64_t size, std::int64_t dim) {
  autograd::primitive::check_defined(x, "split");
  NG_CHECK(size > 0, "split", "piece size must be positive, got ", size);
  NG_CHECK(x.dim() > 0, "split", "cannot split a 0-d tensor");
  const std::int64_t length = x.shape()[wrap_dim(dim, x.dim(), "split")];
  std::vector<std::int64_t> sizes;
  for (std::int64_t start = 0; start < length; start += size)
    sizes.push_back(std::min(size, length - start));
  if (sizes.empty()) sizes.push_back(0);
  return split(x, sizes, dim);
}

std::vector<Tensor> chunk(const Tensor& x, std::int64_t chunks, std::int64_t dim) {
  autograd::primitive::check_defined(x, "chunk");
  NG_CHECK(chunks > 0, "chunk", "number of chunks must be positive, got ", chunks);
  NG_CHECK(x.dim() > 0, "chunk", "cannot chunk a 0-d tensor");
  const std::int64_t length = x.shape()[wrap_dim(dim, x.dim(), "chunk")];
  return split(x, std::max<std::int64_t>((length + chunks - 1) / chunks, 1), dim);
}

std::vector<Tensor> unbind(const Tensor& x, std::int64_t dim) {
  autograd::primitive::check_defined(x, "unbind");
  NG_CHECK(x.dim() > 0, "unbind", "cannot unbind a 0-d tensor");
  const int d = wrap_dim(dim, x.dim(), "unbind");
  return windows_sharing_gradient(
      x, static_cast<std::size_t>(x.shape()[d]),
      [d](const Tensor& t, std::size_t i) { return t.select(d, static_cast<std::int64_t>(i)); },
      "UnbindBackward", "UnbindSliceBackward");
}

}  // namespace normgrad
