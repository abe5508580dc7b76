#include "core/cuda.h"

#include "backends/dispatch.h"

namespace normgrad::cuda {

bool is_available() { return backend::cuda_is_available(); }

int device_count() { return backend::cuda_device_count(); }

void synchronize(int device) { backend::cuda_synchronize(device); }

std::int64_t host_waits(int device) { return backend::cuda_host_waits(device); }

void set_allow_tf32(bool allow) { backend::cuda_set_allow_tf32(allow); }

bool allow_tf32() { return backend::cuda_allow_tf32(); }

}  // namespace normgrad::cuda
