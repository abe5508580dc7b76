#pragma once
// Where a tensor's memory lives. The CPU is always there; CUDA devices exist only in builds
// configured with the CUDA backend and on machines that have a GPU.

#include <ostream>
#include <string>

namespace normgrad {

enum class DeviceType : unsigned char { CPU, CUDA };

struct Device {
  DeviceType type = DeviceType::CPU;
  int index = 0;

  static constexpr Device cpu() { return {DeviceType::CPU, 0}; }
  static constexpr Device cuda(int index = 0) { return {DeviceType::CUDA, index}; }

  constexpr bool is_cpu() const { return type == DeviceType::CPU; }
  constexpr bool is_cuda() const { return type == DeviceType::CUDA; }
  constexpr bool operator==(const Device&) const = default;

  std::string str() const { return is_cpu() ? "cpu" : "cuda:" + std::to_string(index); }
};

inline std::ostream& operator<<(std::ostream& out, const Device& device) {
  return out << device.str();
}

}  // namespace normgrad
