// The libFuzzer entry point of one harness; CMake builds this file once per harness with
// NORMGRAD_FUZZ_HARNESS naming it (fuzz_safetensors, fuzz_idx, ...).

#include "harnesses.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return normgrad::fuzz::NORMGRAD_FUZZ_HARNESS(data, size);
}
