#include "backends/dispatch.h"

#include "backends/profiling_backend.h"
#include "profiler/recorder.h"

namespace normgrad::backend {

Backend& backend_for(Device device) {
  Backend& backend = device.is_cpu() ? cpu_backend() : cuda_backend(device.index);
  // While a profile is open, every kernel goes through the recording twin.
  return profiler::recording() ? profiling_backend(backend) : backend;
}

}  // namespace normgrad::backend
