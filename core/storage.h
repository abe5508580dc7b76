#pragma once
// Storage: one block of device memory, shared by a tensor and all of its views.
//
// It also holds the version counter that autograd uses to detect in-place changes to a
// tensor that was saved for a backward pass: every in-place op bumps it, and a saved tensor
// remembers the version it saw.

#include <cstddef>
#include <cstdint>
#include <memory>

#include "base/device.h"

namespace normgrad {

class Storage {
 public:
  // Allocates nbytes on `device` through its backend. Contents are uninitialised.
  Storage(std::size_t nbytes, Device device);
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  void* data() const { return data_; }
  std::size_t nbytes() const { return nbytes_; }
  Device device() const { return device_; }

  std::uint64_t version() const { return version_; }
  void bump_version() { ++version_; }

 private:
  void* data_ = nullptr;
  std::size_t nbytes_ = 0;
  Device device_;
  std::uint64_t version_ = 0;
};

}  // namespace normgrad
