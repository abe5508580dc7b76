#include "core/storage.h"

#include "backends/dispatch.h"

namespace normgrad {

Storage::Storage(std::size_t nbytes, Device device) : nbytes_(nbytes), device_(device) {
  data_ = backend::backend_for(device).allocate(nbytes);
}

Storage::~Storage() {
  if (data_) backend::backend_for(device_).deallocate(data_, nbytes_);
}

}  // namespace normgrad
