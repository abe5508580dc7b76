#pragma once
// What a device's allocator holds, and how to give cached memory back.
//
// Freed CPU blocks of 256 KiB and more are kept for reuse by later tensors of the same size or
// down to half of it.
// Set NORMGRAD_CPU_CACHING=0 in the environment, or call set_memory_caching(device, false),
// to free every block at once instead, e.g. when hunting memory errors.

#include "backends/backend.h"
#include "base/device.h"

namespace normgrad {

using backend::MemoryStats;

MemoryStats memory_stats(Device device = Device::cpu());
// Starts peak_allocated_bytes again from the bytes allocated now, so that the next reading
// gives the peak of what ran in between.
void reset_peak_memory_stats(Device device = Device::cpu());
void empty_cache(Device device = Device::cpu());
void set_memory_caching(Device device, bool enabled);

}  // namespace normgrad
