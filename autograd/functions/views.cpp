// Views: new shapes and strides over the same storage, no copies. Their backward passes
// undo the geometry: a permute's is the inverse permute, an expand's is a sum, and a
// narrow/select's writes dy into the right window of a zero tensor.

#include <algorithm>
#include <optional>

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
using autograd::primitive::check_defined;

namespace {

// Strides that let `shape` view memory laid out as (old_shape, old_strides), if any. Old dims
// are taken in runs that are contiguous with each other; each run must be covered exactly by
// a run of new dims.
std::optional<Strides> view_strides(const Shape& old_shape, const Strides& old_strides,
                                    const Shape& shape) {
  if (old_shape.empty() || numel(old_shape) == 0) return contiguous_strides(shape);
  Strides strides(shape.size());
  auto view_d = static_cast<std::int64_t>(shape.size()) - 1;
  std::int64_t run_base_stride = old_strides.back();
  std::int64_t run_numel = 1, view_numel = 1;
  for (auto d = static_cast<std::int64_t>(old_shape.size()) - 1; d >= 0; --d) {
    run_numel *= old_shape[d];
    const bool run_ends = d == 0 || (old_shape[d - 1] != 1 &&
                                     old_strides[d - 1] != run_numel * run_base_stride);
    if (!run_ends) continue;
    while (view_d >= 0 && (view_numel < run_numel || shape[view_d] == 1)) {
      strides[view_d] = view_numel * run_base_stride;
      view_numel *= shape[view_d];
      --view_d;
    }
    if (view_numel != run_numel) return std::nullopt;
    if (d > 0) {
      run_base_stride = old_strides[d - 1];
      run_numel = 1;
      view_numel = 1;
    }
  }
  if (view_d != -1) return std::nullopt;
  return strides;
}

// Replaces one -1 by the size that keeps the element count.
Shape infer_shape(const Shape& requested, std::int64_t count, const char* op) {
  Shape shape = requested;
  std::int64_t known = 1;
  int inferred = -1;
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == -1) {
      NG_CHECK(inferred < 0, op, "only one dim can be -1, got shape ", requested);
      inferred = static_cast<int>(i);
    } else {
      NG_CHECK(shape[i] >= 0, op, "invalid size ", shape[i], " in shape ", requested);
      NG_CHECK(multiply_fits(known, shape[i], known), op, "shape ", requested,
               " has more elements than an int64 can count");
    }
  }
  if (inferred >= 0) {
    NG_CHECK(known != 0 && count % known == 0, op, "shape ", requested, " is invalid for ",
             count, " elements");
    shape[inferred] = count / known;
  }
  NG_CHECK(numel(shape) == count, op, "shape ", requested, " is invalid for ", count,
           " elements");
  return shape;
}

// A view of x with the given geometry, differentiable through `backward`.
Tensor make_differentiable_view(const Tensor& x, Shape shape, Strides strides,
                                std::int64_t offset, const char* name,
                                autograd::BackwardFunction backward) {
  Tensor y = detail::make_view(x, std::move(shape), std::move(strides), offset);
  if (needs_grad(x)) record(name, y, {x}, {}, std::move(backward));
  return y;
}

// Backward of a view that picks a window of its base (narrow, slice, select): dy lands in
// that window of a zero tensor shaped like the base.
template <typename MakeWindow>
autograd::BackwardFunction into_window(const Tensor& x, MakeWindow make_window) {
  return [shape = x.shape(), make_window](const Tensor& dy, const SavedTensors&) {
    Tensor grad = zeros(shape, {.dtype = dy.dtype(), .device = dy.device()});
    detail::copy_values(make_window(grad), dy);
    return Grads{grad};
  };
}

}  // namespace

Tensor Tensor::view(const Shape& requested) const {
  check_defined(*this, "view");
  Shape shape = infer_shape(requested, numel(), "view");
  std::optional<Strides> strides = view_strides(this->shape(), this->strides(), shape);
  NG_CHECK(strides.has_value(), "view", "cannot view a tensor of shape ", this->shape(),
           " and strides ", this->strides(), " as ", shape,
           " without copying; use reshape() or contiguous() first");
  return make_differentiable_view(*this, shape, *strides, offset(), "ViewBackward",
                                  [old = this->shape()](const Tensor& dy, const SavedTensors&) {
                                    return Grads{dy.reshape(old)};
                                  });
}

Tensor Tensor::reshape(const Shape& requested) const {
  check_defined(*this, "reshape");
  Shape shape = infer_shape(requested, numel(), "reshape");
  if (view_strides(this->shape(), this->strides(), shape)) return view(shape);
  return contiguous().view(shape);
}

Tensor Tensor::flatten(std::int64_t start_dim, std::int64_t end_dim) const {
  check_defined(*this, "flatten");
  if (dim() == 0) return reshape({1});
  const int start = wrap_dim(start_dim, dim(), "flatten");
  const int end = wrap_dim(end_dim, dim(), "flatten");
  NG_CHECK(start <= end, "flatten", "start_dim ", start_dim, " comes after end_dim ", end_dim);
  Shape shape(this->shape().begin(), this->shape().begin() + start);
  std::int64_t merged = 1;
  for (int d = start; d <= end; ++d) merged *= this->shape()[d];
  shape.push_back(merged);
  shape.insert(shape.end(), this->shape().begin() + end + 1, this->shape().end());
  return reshape(shape);
}

Tensor Tensor::permute(const std::vector<std::int64_t>& dims) const {
  check_defined(*this, "permute");
  NG_CHECK(static_cast<std::int64_t>(dims.size()) == dim(), "permute", "got ", dims.size(),
           " dims for a tensor of rank ", dim(), " (shape ", shape(), ")");
  Shape shape(dims.size());
  Strides strides(dims.size());
  std::vector<std::int64_t> inverse(dims.size(), -1);
  for (std::size_t i = 0; i < dims.size(); ++i) {
    const int d = wrap_dim(dims[i], dim(), "permute");
    NG_CHECK(inverse[d] < 0, "permute", "dim ", dims[i], " is repeated in ", Shape(dims));
    inverse[d] = static_cast<std::int64_t>(i);
    shape[i] = this->shape()[d];
    strides[i] = this->strides()[d];
  }
  return make_differentiable_view(*this, shape, strides, offset(), "PermuteBackward",
                                  [inverse](const Tensor& dy, const SavedTensors&) {
                                    return Grads{dy.permute(inverse)};
                                  });
}

Tensor Tensor::transpose(std::int64_t dim0, std::int64_t dim1) const {
  check_defined(*this, "transpose");
  std::vector<std::int64_t> dims(static_cast<std::size_t>(dim()));
  for (std::size_t i = 0; i < dims.size(); ++i) dims[i] = static_cast<std::int64_t>(i);
  if (dim() == 0) return permute({});
  std::swap(dims[wrap_dim(dim0, dim(), "transpose")], dims[wrap_dim(dim1, dim(), "transpose")]);
  return permute(dims);
}

Tensor Tensor::t() const {
  check_defined(*this, "t");
  NG_CHECK(dim() <= 2, "t", "expects a tensor of rank <= 2, got shape ", shape(),
           "; use transpose(dim0, dim1)");
  return dim() < 2 ? *this : transpose(0, 1);
}

Tensor Tensor::slice(std::int64_t dim_index, std::int64_t start, std::int64_t end,
                     std::int64_t step) const {
  check_defined(*this, "slice");
  const int d = wrap_dim(dim_index, dim(), "slice");
  NG_CHECK(step > 0, "slice", "step must be positive, got ", step);
  const std::int64_t size = shape()[d];
  // Python-style bounds: negative counts from the end, out-of-range is clipped.
  if (start < 0) start += size;
  if (end < 0) end += size;
  start = std::clamp<std::int64_t>(start, 0, size);
  end = std::clamp<std::int64_t>(end, start, size);
  Shape new_shape = shape();
  Strides new_strides = strides();
  new_shape[d] = (end - start + step - 1) / step;
  new_strides[d] *= step;
  const std::int64_t new_offset = offset() + start * strides()[d];
  return make_differentiable_view(
      *this, new_shape, new_strides, new_offset, "SliceBackward",
      into_window(*this, [d, start, end, step](const Tensor& base) {
        return base.slice(d, start, end, step);
      }));
}

Tensor Tensor::narrow(std::int64_t dim_index, std::int64_t start, std::int64_t length) const {
  check_defined(*this, "narrow");
  const int d = wrap_dim(dim_index, dim(), "narrow");
  const std::int64_t size = shape()[d];
  if (start < 0) start += size;
  NG_CHECK(start >= 0 && length >= 0 && start + length <= size, "narrow", "window [", start,
           ", ", start + length, ") does not fit dim ", d, " of size ", size, " (shape ",
           shape(), ")");
  return slice(d, start, start + length);
}

Tensor Tensor::select(std::int64_t dim_index, std::int64_t index) const {
  check_defined(*this, "select");
  NG_CHECK(dim() > 0, "select", "cannot select from a 0-d tensor");
  const int d = wrap_dim(dim_index, dim(), "select");
  const std::int64_t size = shape()[d];
  NG_CHECK(index >= -size && index < size, "select", "index ", index,
           " is out of range for dim ", d, " of size ", size, " (shape ", shape(), ")");
  if (index < 0) index += size;
  Shape new_shape = shape();
  Strides new_strides = strides();
  new_shape.erase(new_shape.begin() + d);
  new_strides.erase(new_strides.begin() + d);
  return make_differentiable_view(
      *this, new_shape, new_strides, offset() + index * strides()[d], "SelectBackward",
      into_window(*this, [d, index](const Tensor& base) { return base.select(d, index); }));
}

Tensor Tensor::expand(const Shape& requested) const {
  check_defined(*this, "expand");
  NG_CHECK(requested.size() >= shape().size(), "expand", "cannot expand shape ", shape(),
           " to fewer dims: ", requested);
  const std::size_t lead = requested.size() - shape().size();
  Shape new_shape(requested.size());
  Strides new_strides(requested.size(), 0);
  for (std::size_t i = 0; i < requested.size(); ++i) {
    if (i < lead) {
      NG_CHECK(requested[i] >= 0, "expand", "new leading dim ", i, " must have a size, got ",
               requested[i]);
      new_shape[i] = requested[i];
      continue;
    }
    const std::int64_t own = shape()[i - lead];
    const std::int64_t want = requested[i] == -1 ? own : requested[i];
    NG_CHECK(want == own || own == 1, "expand", "cannot expand shape ", shape(), " to ",
             requested, ": dim ", i - lead, " has size ", own, " (only size-1 dims expand)");
    new_shape[i] = want;
    new_strides[i] = want == own ? strides()[i - lead] : 0;
  }
  checked_numel(new_shape, "expand");  // a view may not have more elements than int64 counts
  return make_differentiable_view(*this, new_shape, new_strides, offset(), "ExpandBackward",
                                  [old = shape()](const Tensor& dy, const SavedTensors&) {
                                    return Grads{autograd::sum_to(dy, old)};
                                  });
}

Tensor Tensor::unsqueeze(std::int64_t dim_index) const {
  check_defined(*this, "unsqueeze");
  const int d = wrap_dim(dim_index, dim() + 1, "unsqueeze");
  Shape new_shape = shape();
  Strides new_strides = strides();
  const std::int64_t stride =
      d < dim() ? strides()[d] * shape()[d] : 1;
  new_shape.insert(new_shape.begin() + d, 1);
  new_strides.insert(new_strides.begin() + d, stride);
  return make_differentiable_view(*this, new_shape, new_strides, offset(), "UnsqueezeBackward",
                                  [d](const Tensor& dy, const SavedTensors&) {
                                    return Grads{dy.squeeze(d)};
                                  });
}

Tensor Tensor::squeeze() const {
  check_defined(*this, "squeeze");
  Shape new_shape;
  Strides new_strides;
  for (std::size_t d = 0; d < shape().size(); ++d)
    if (shape()[d] != 1) {
      new_shape.push_back(shape()[d]);
      new_strides.push_back(strides()[d]);
    }
  return make_differentiable_view(*this, new_shape, new_strides, offset(), "SqueezeBackward",
                                  [old = shape()](const Tensor& dy, const SavedTensors&) {
                                    return Grads{dy.reshape(old)};
                                  });
}

Tensor Tensor::squeeze(std::int64_t dim_index) const {
  check_defined(*this, "squeeze");
  if (dim() == 0) return *this;
  const int d = wrap_dim(dim_index, dim(), "squeeze");
  if (shape()[d] != 1) return *this;
  Shape new_shape = shape();
  Strides new_strides = strides();
  new_shape.erase(new_shape.begin() + d);
  new_strides.erase(new_strides.begin() + d);
  return make_differentiable_view(*this, new_shape, new_strides, offset(), "SqueezeBackward",
                                  [d](const Tensor& dy, const SavedTensors&) {
                                    return Grads{dy.unsqueeze(d)};
                                  });
}

}  // namespace normgrad
