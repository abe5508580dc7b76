#pragma once
// What the recurrent family's CPU-versus-CUDA cases share (test_recurrent.cpp and
// test_recurrent_sequence.cpp): a GRU or LSTM layer with random parameters, and the tolerance a
// layer is held to after some steps.

#include <memory>
#include <string>

#include "cuda_parity.h"
#include "module_gradcheck.h"

namespace testing {

// A layer of 6 inputs and 8 units, its parameters drawn from fixed seeds.
inline std::shared_ptr<normgrad::nn::Recurrent> parity_layer(bool lstm, const std::string& norm,
                                                             bool bidirectional,
                                                             normgrad::DType dtype,
                                                             bool batch_first = false) {
  normgrad::Generator generator(11);
  const normgrad::nn::RecurrentOptions options{.cell = {.norm = norm, .dtype = dtype},
                                               .bidirectional = bidirectional,
                                               .batch_first = batch_first};
  std::shared_ptr<normgrad::nn::Recurrent> layer;
  if (lstm)
    layer = std::make_shared<normgrad::nn::Lstm>(6, 8, options, generator);
  else
    layer = std::make_shared<normgrad::nn::Gru>(6, 8, options, generator);
  randomise(*layer, 12);
  return layer;
}

// A layer chains T steps of matrix products (sums of input or hidden size terms) and norms
// (norm_values), and its parameter gradients sum over T B rows; errors of each step carry into
// the next, so a layer is held to norm_gradients (2e-4 in float32) scaled by the number of steps.
inline Tolerance layer_tolerance(normgrad::DType dtype, double steps) {
  const Tolerance per_step = norm_gradients(dtype);
  return {per_step.rtol * steps, per_step.atol * steps};
}

}  // namespace testing
