#include "common/device_flag.h"

namespace examples {

namespace ng = normgrad;

ng::Device parse_device(const std::string& text, const std::string& program) {
  const std::string prefix = "cuda:";
  ng::Device device = ng::Device::cpu();
  if (text == "cpu") return device;
  if (text == "cuda")
    device = ng::Device::cuda();
  else if (text.rfind(prefix, 0) == 0 && text.size() > prefix.size() && text.size() < 12 &&
           text.find_first_not_of("0123456789", prefix.size()) == std::string::npos)
    device = ng::Device::cuda(std::stoi(text.substr(prefix.size())));
  else
    throw ng::Error(program + ": --device must be cpu, cuda or cuda:N, got '" + text + "'");
  NG_CHECK(ng::cuda::is_available() && device.index < ng::cuda::device_count(), program,
           "--device ", text, ": ", ng::cuda::is_available() ? ng::cuda::device_count() : 0,
           " CUDA devices are available");
  return device;
}

}  // namespace examples
