#pragma once
// Training state in one checkpoint: the model's parameters and buffers ("model.*"), the
// optimizer's state ("optimizer.*"), the random generator's (seed, offset) ("rng"), and the
// step. A run resumed from it draws the same random numbers and takes the same steps as the
// run that was interrupted, so its losses are exactly those the uninterrupted run had.
//
//   io::save_training_state("run.safetensors", model, adam, generator, step);
//   ... later, in a fresh process ...
//   std::int64_t step = io::load_training_state("run.safetensors", model, adam, generator);

#include <cstdint>
#include <string>

#include "core/generator.h"
#include "io/checkpoint.h"
#include "nn/module.h"
#include "optim/optimizer.h"

namespace normgrad::io {

// Atomic, as io::save_tensors. `metadata` travels with it: what else a training loop needs to
// resume (a data position, the best score so far, a tokenizer's fingerprint); the key "content"
// is the format's own.
void save_training_state(const std::string& path, const nn::Module& model,
                         const optim::Optimizer& optimizer, const Generator& generator,
                         std::int64_t step, const Metadata& metadata = {});

// Restores model, optimizer and generator and returns the step; fills *metadata, when given,
// with what save_training_state stored. The file is checked against all three before any of
// them changes.
std::int64_t load_training_state(const std::string& path, nn::Module& model,
                                 optim::Optimizer& optimizer, Generator& generator,
                                 Metadata* metadata = nullptr);

}  // namespace normgrad::io
