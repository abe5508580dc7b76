#include "backends/dispatch.h"

namespace normgrad::backend {

Backend& backend_for(Device device) {
  return device.is_cpu() ? cpu_backend() : cuda_backend(device.index);
}

}  // namespace normgrad::backend
