#pragma once
// A model's size as the programs report it: the values its parameters hold, all told.

#include <normgrad/normgrad.h>

#include <cstdint>

namespace examples {

inline std::int64_t count_parameters(const normgrad::nn::Module& module) {
  std::int64_t count = 0;
  for (const normgrad::Tensor& parameter : module.parameters()) count += parameter.numel();
  return count;
}

}  // namespace examples
