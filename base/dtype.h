#pragma once
// Element types. float32 is the default; float64 serves gradient checks and precision tests;
// int64 holds indices and labels; bfloat16 is a storage type for mixed precision (bfloat16.h),
// which the matrix products, the norms and the elementwise ops compute in float32.

#include <cstddef>
#include <cstdint>
#include <ostream>
#include <string_view>

#include "base/bfloat16.h"

namespace normgrad {

enum class DType : std::uint8_t { Float32, Float64, Int64, BFloat16 };

constexpr std::size_t element_size(DType dtype) {
  switch (dtype) {
    case DType::Float32:
      return 4;
    case DType::BFloat16:
      return 2;
    case DType::Float64:
    case DType::Int64:
      return 8;
  }
  return 8;
}

constexpr bool is_floating(DType dtype) { return dtype != DType::Int64; }

// The dtype a kernel computes a dtype's values in, and keeps their statistics in (a norm's
// mean and rstd): float32 for bfloat16, the dtype itself otherwise.
constexpr DType compute_dtype(DType dtype) {
  return dtype == DType::BFloat16 ? DType::Float32 : dtype;
}

constexpr std::string_view to_string(DType dtype) {
  switch (dtype) {
    case DType::Float32: return "float32";
    case DType::Float64: return "float64";
    case DType::Int64: return "int64";
    case DType::BFloat16:
      return "bfloat16";
  }
  return "?";
}

inline std::ostream& operator<<(std::ostream& out, DType dtype) { return out << to_string(dtype); }

// The C++ type behind each DType, and back.
template <typename T> struct dtype_of;
template <> struct dtype_of<float> { static constexpr DType value = DType::Float32; };
template <> struct dtype_of<double> { static constexpr DType value = DType::Float64; };
template <> struct dtype_of<std::int64_t> { static constexpr DType value = DType::Int64; };
template <> struct dtype_of<bfloat16> { static constexpr DType value = DType::BFloat16; };
template <typename T> inline constexpr DType dtype_of_v = dtype_of<T>::value;

}  // namespace normgrad
