#include "harnesses.h"

namespace normgrad::fuzz {

// The harnesses by name, in the order scripts/fuzz runs them (tests/fuzz/CMakeLists.txt lists
// the same names for the fuzzer programs).
const std::vector<NamedHarness>& harnesses() {
  static const std::vector<NamedHarness> all = {{"safetensors", fuzz_safetensors},
                                                {"training_state", fuzz_training_state},
                                                {"idx", fuzz_idx},
                                                {"idx_gzip", fuzz_idx_gzip},
                                                {"mnist_folder", fuzz_mnist_folder},
                                                {"norm_spec", fuzz_norm_spec},
                                                {"npy", fuzz_npy}};
  return all;
}

}  // namespace normgrad::fuzz
