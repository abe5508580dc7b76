#pragma once
// Makes `device` the calling thread's current CUDA device for a scope, and restores the
// previous one after it. Runtime calls (cudaMalloc, launches) act on the current device.

#include <cuda_runtime_api.h>

#include "backends/cuda/cuda_check.h"

namespace normgrad::backend::cuda {

class DeviceGuard {
 public:
  explicit DeviceGuard(int device) {
    NG_CUDA_CHECK(cudaGetDevice(&previous_));
    if (previous_ != device) NG_CUDA_CHECK(cudaSetDevice(device));
    changed_ = previous_ != device;
  }
  ~DeviceGuard() {
    if (changed_) cudaSetDevice(previous_);  // a destructor must not throw
  }
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int previous_ = 0;
  bool changed_ = false;
};

}  // namespace normgrad::backend::cuda
