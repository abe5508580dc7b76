#pragma once
// CUDA devices as the user sees them. Tensors and modules move with .to(Device::cuda(i)); ops
// run on the device their tensors are on, and mixing devices in one op is an error.
//
//   if (normgrad::cuda::is_available()) model.to(Device::cuda());
//
// A build without the CUDA backend (or a machine without a GPU) reports no device, and asking
// for a CUDA tensor there throws normgrad::Error saying so.

#include <cstdint>

namespace normgrad::cuda {

bool is_available();
int device_count();
// Waits until the device has finished all work queued so far (for timing; copies to the host
// wait by themselves).
void synchronize(int device = 0);
// How many times the host has waited for the device to copy data back since the process
// started: a tensor read on the host (item(), to_vector(), .to(Device::cpu())), or a check
// that must see a kernel's verdict (cross_entropy's of its targets). Copies to the device never
// wait. A training step that reads nothing back leaves the count where it was, so the GPU
// runs ahead of the host; tests and benchmarks use it to hold steps to that.
std::int64_t host_waits(int device = 0);
// Whether float32 matrix products may use TF32 tensor cores: faster, with 10-bit mantissas
// in the products. Off by default, so results match the CPU's to float32 rounding.
void set_allow_tf32(bool allow);
bool allow_tf32();

}  // namespace normgrad::cuda
