#pragma once
// Launchers of random.cu. Counter-based random numbers (Philox, backends/philox.h): element i
// depends only on (seed, offset + i), so a CUDA tensor gets exactly the numbers a CPU tensor gets.
// Each takes what the Backend method of the same name takes (backends/backend.h documents
// the contract), after the device's Context; it queues its kernels on context.stream.

#include "backends/backend.h"
#include "backends/cuda/context.h"

namespace normgrad::backend::cuda {

void random(const Context& context, const TensorRef& out, RandomKind kind, std::uint64_t seed,
            std::uint64_t offset, double alpha, double beta);
void random_with_counters(const Context& context, const TensorRef& out, RandomKind kind,
                          const TensorRef& counters, std::uint64_t offset, double alpha,
                          double beta);

}  // namespace normgrad::backend::cuda
