#pragma once
// Building blocks on tensors for the library's own code (not part of the user API): making
// fresh tensors and views, and handing tensors to the backend as TensorRef.

#include "backends/backend.h"
#include "core/tensor.h"

namespace normgrad::detail {

// A new contiguous tensor, uninitialised. A shape whose byte count overflows or passes
// max_tensor_bytes (base/checked.h), and an allocation that fails, throw Error naming `op`,
// the shape and the bytes asked for.
Tensor make_tensor(const Shape& shape, DType dtype, Device device, const char* op = "empty");

// A view of base's storage with its own geometry and no autograd history.
Tensor make_view(const Tensor& base, Shape shape, Strides strides, std::int64_t offset);

backend::Backend& backend_of(const Tensor& tensor);
backend::TensorRef ref(const Tensor& tensor);
// A kernel's optional operand: null for an undefined tensor, else its ref, kept in `storage`.
const backend::TensorRef* optional_ref(const Tensor& tensor, backend::TensorRef& storage);

// The same view, broadcast to `shape` (stride 0 in broadcast dims); shapes were checked.
backend::TensorRef broadcast_ref(const Tensor& tensor, const Shape& shape);

// Copies src into dst (same shape, any dtypes, same device), without autograd.
void copy_values(const Tensor& dst, const Tensor& src);

}  // namespace normgrad::detail
