#pragma once
// Turning a run-time DType into a compile-time C++ type, once per kernel call.
//
//   dispatch_any(dtype, "cpu fill", [&](auto tag) { using T = typename decltype(tag)::type; ... });
//
// dispatch_floating throws normgrad::Error for int64, so float-only kernels (exp, softmax, ...)
// fail with a message instead of being instantiated for integers.

#include <cstdint>

#include "core/dtype.h"
#include "core/error.h"

namespace normgrad::backend {

template <typename T> struct TypeTag { using type = T; };

template <typename Function>
decltype(auto) dispatch_any(DType dtype, const char* op, Function&& function) {
  switch (dtype) {
    case DType::Float32:
      return function(TypeTag<float>{});
    case DType::Float64:
      return function(TypeTag<double>{});
    case DType::Int64:
      return function(TypeTag<std::int64_t>{});
  }
  throw Error(detail::concat(op, ": unknown dtype ", static_cast<int>(dtype)));
}

template <typename Function>
decltype(auto) dispatch_floating(DType dtype, const char* op, Function&& function) {
  switch (dtype) {
    case DType::Float32:
      return function(TypeTag<float>{});
    case DType::Float64:
      return function(TypeTag<double>{});
    case DType::Int64:
      break;
  }
  throw Error(
      detail::concat(op, ": dtype ", dtype, " is not supported (expects float32 or float64)"));
}

}  // namespace normgrad::backend
