#include "core/memory.h"

#include "backends/dispatch.h"

namespace normgrad {

MemoryStats memory_stats(Device device) { return backend::backend_for(device).memory_stats(); }

void reset_peak_memory_stats(Device device) {
  backend::backend_for(device).reset_peak_memory_stats();
}

void empty_cache(Device device) { backend::backend_for(device).empty_cache(); }

void set_memory_caching(Device device, bool enabled) {
  backend::backend_for(device).set_caching(enabled);
}

}  // namespace normgrad
