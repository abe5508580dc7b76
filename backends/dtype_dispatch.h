#pragma once
// Turning a run-time DType into a compile-time C++ type, once per kernel call.
//
//   dispatch_any(dtype, "cpu fill", [&](auto tag) { using T = typename decltype(tag)::type; ... });
//
// dispatch_floating throws normgrad::Error for int64, so float-only kernels (exp, softmax, ...)
// fail with a message instead of being instantiated for integers. Neither instantiates a kernel
// for bfloat16, a storage type: the CPU's methods hand bfloat16 operands to their float32
// kernels through float32 working copies (bfloat16_widening.h) before they dispatch, and
// whatever is left refuses it here. dispatch_storage adds bfloat16 for the kernels that only
// move or convert values (copy, fill, where, random draws on both devices) and for CUDA's,
// which compute in compute_t of the stored type (compute_type.h), as
// dispatch_floating_or_bfloat16 does for CUDA's float-only ones (softmax, the norms);
// dispatch_bits gives the kernels that move elements an unsigned type of their size.

#include <cstdint>
#include <utility>

#include "base/dtype.h"
#include "base/error.h"

namespace normgrad::backend {

template <typename T> struct TypeTag { using type = T; };

[[noreturn]] inline void throw_bfloat16_unsupported(const char* op) {
  throw Error(detail::concat(op,
                             ": dtype bfloat16 is not supported here; bfloat16 serves the "
                             "matrix products, the norms, softmax, cross-entropy and the "
                             "elementwise ops: convert with .to(DType::Float32) first"));
}

template <typename Function>
decltype(auto) dispatch_any(DType dtype, const char* op, Function&& function) {
  switch (dtype) {
    case DType::Float32:
      return function(TypeTag<float>{});
    case DType::Float64:
      return function(TypeTag<double>{});
    case DType::Int64:
      return function(TypeTag<std::int64_t>{});
    case DType::BFloat16:
      throw_bfloat16_unsupported(op);
  }
  throw Error(detail::concat(op, ": unknown dtype ", static_cast<int>(dtype)));
}

template <typename Function>
decltype(auto) dispatch_storage(DType dtype, const char* op, Function&& function) {
  if (dtype == DType::BFloat16) return function(TypeTag<bfloat16>{});
  return dispatch_any(dtype, op, std::forward<Function>(function));
}

template <typename Function>
decltype(auto) dispatch_floating(DType dtype, const char* op, Function&& function);

// An unsigned integer type of the dtype's element size, for kernels that move elements without
// looking at their values (selection, gathering): every dtype, bfloat16 included.
template <typename Function> decltype(auto) dispatch_bits(DType dtype, Function&& function) {
  switch (element_size(dtype)) {
    case 2:
      return function(TypeTag<std::uint16_t>{});
    case 4:
      return function(TypeTag<std::uint32_t>{});
    default:
      return function(TypeTag<std::uint64_t>{});
  }
}

// dispatch_floating, and bfloat16 too: for kernels that load bfloat16 and compute in float32.
template <typename Function>
decltype(auto) dispatch_floating_or_bfloat16(DType dtype, const char* op, Function&& function) {
  if (dtype == DType::BFloat16) return function(TypeTag<bfloat16>{});
  return dispatch_floating(dtype, op, std::forward<Function>(function));
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
    case DType::BFloat16:
      throw_bfloat16_unsupported(op);
  }
  throw Error(
      detail::concat(op, ": dtype ", dtype, " is not supported (expects float32 or float64)"));
}

}  // namespace normgrad::backend
