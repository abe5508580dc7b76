#pragma once
// How a recurrent layer's whole loop in one direction runs as one op (gru_sequence.h): which
// rows take each step, the dropout on the state its W_hh reads, and the direction.
//
// Rows that skip a step keep their state through it, whether a mask or packed batch sizes say
// so. Packed, a step computes only the rows it runs, so padding costs nothing; a mask runs
// every row at every step and keeps the old state where it is 0.

#include <cstdint>
#include <vector>

#include "core/tensor.h"

namespace normgrad {

struct SequenceOptions {
  // Undefined, or [T, B], any dtype: rows where it is 0 keep their state at that step.
  Tensor mask{};
  // Empty, or T counts (each in [0, B]): step t runs the rows [0, batch_sizes[t]) only and
  // the others keep their state, as a mask of that many leading ones would say, with only
  // those rows computed. With rows sorted longest first, as PyTorch's packed sequences have
  // them, batch_sizes[t] is the number of sequences longer than t. Not together with mask.
  std::vector<std::int64_t> batch_sizes{};
  // Undefined, or [B, H]: multiplies h where W_hh reads it at every step (variational
  // dropout); the state carried on is not masked.
  Tensor state_dropout{};
  bool reverse = false;  // run t = T-1 down to 0
};

}  // namespace normgrad
