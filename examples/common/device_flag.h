#pragma once
// The programs' --device flag: "cpu", "cuda" or "cuda:N", and a CUDA device must be there.
//
//   normgrad::Device device = examples::parse_device(options.device, "order_embedding");

#include <normgrad/normgrad.h>

#include <string>

namespace examples {

// The device named; a normgrad::Error naming `program` for another text, or a CUDA device
// that is not there.
normgrad::Device parse_device(const std::string& text, const std::string& program);

}  // namespace examples
