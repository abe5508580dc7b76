// The bytes as a safetensors checkpoint: io::load_tensors, checksums verified, then the same
// file loaded into a module, the path a user's io::load takes.

#include "harness_support.h"
#include "harnesses.h"

namespace normgrad::fuzz {

int fuzz_safetensors(const std::uint8_t* data, std::size_t size) {
  const std::string path = write_scratch_file("input.safetensors", data, size);
  accept_errors([&] {
    io::Metadata metadata;
    const nn::StateDict tensors = io::load_tensors(path, &metadata);
    for (const auto& entry : tensors) {
      require(!entry.first.empty(), "a loaded tensor has an empty name");
      require(entry.second.defined(), "a loaded tensor is undefined");
    }
  });
  accept_errors([&] {
    nn::Linear layer(3, 2);
    io::load(layer, path);
  });
  return 0;
}

}  // namespace normgrad::fuzz
