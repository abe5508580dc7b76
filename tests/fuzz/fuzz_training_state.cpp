// The bytes as a training state for a Linear(3, 2) trained with Adam:
// io::load_training_state, then, if it loaded, one training step with what was loaded.

#include "harness_support.h"
#include "harnesses.h"

namespace normgrad::fuzz {

int fuzz_training_state(const std::uint8_t* data, std::size_t size) {
  const std::string path = write_scratch_file("input.safetensors", data, size);
  return accept_errors([&] {
    manual_seed(1);
    nn::Linear model(3, 2);
    optim::Adam adam(model.parameters(), {.lr = 1e-3});
    Generator generator(1);
    io::load_training_state(path, model, adam, generator);
    // A state that loads must also train.
    model.forward(ones({2, 3})).sum().backward();
    adam.step();
  });
}

}  // namespace normgrad::fuzz
