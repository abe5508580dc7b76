#pragma once
// Element types. float32 is the default; float64 serves gradient checks and precision tests;
// int64 holds indices and labels.

#include <cstddef>
#include <cstdint>
#include <ostream>
#include <string_view>

namespace normgrad {

enum class DType : std::uint8_t { Float32, Float64, Int64 };

constexpr std::size_t element_size(DType dtype) {
  return dtype == DType::Float32 ? 4 : 8;
}

constexpr bool is_floating(DType dtype) { return dtype != DType::Int64; }

constexpr std::string_view to_string(DType dtype) {
  switch (dtype) {
    case DType::Float32: return "float32";
    case DType::Float64: return "float64";
    case DType::Int64: return "int64";
  }
  return "?";
}

inline std::ostream& operator<<(std::ostream& out, DType dtype) { return out << to_string(dtype); }

// The C++ type behind each DType, and back.
template <typename T> struct dtype_of;
template <> struct dtype_of<float> { static constexpr DType value = DType::Float32; };
template <> struct dtype_of<double> { static constexpr DType value = DType::Float64; };
template <> struct dtype_of<std::int64_t> { static constexpr DType value = DType::Int64; };
template <typename T> inline constexpr DType dtype_of_v = dtype_of<T>::value;

}  // namespace normgrad
