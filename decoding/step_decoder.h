#pragma once
// StepDecoder: what a model offers a search algorithm — one decoding step over many rows at a
// time, and a way to rearrange its rows.
//
// A row is one hypothesis being extended: the model's state for it (a GRU's hidden state, a
// Transformer's key/value cache, the encoder's output and mask for its sentence). The caller
// prepares the state for a batch of B source sentences, one row each, before the search; the
// search then calls
//
//   step(previous_tokens)   int64 [rows]: the last token of every row (bos at the first call)
//                           -> log-probabilities [rows, V] of the next token, float32 or
//                              float64, on device();
//   reorder(rows)           int64 [new_rows]: new row i continues old row rows[i]. Rows may be
//                           repeated (a hypothesis with several continuations: the first call
//                           turns B rows into up to B k) or left out (a hypothesis that fell off
//                           the beam, or a finished sentence's rows), so new_rows may be smaller
//                           or larger than the current number of rows.
//
// A state tensor with rows along dim 0 follows with one index_select(state, 0, rows); a
// Transformer's cache of shape [rows, heads, t, d] does the same. Every row is at the same
// time step (the search is synchronous), so a Transformer's position is the number of step()
// calls so far. The tensors the search passes lie on device().

#include <cstdint>

#include "base/device.h"
#include "core/tensor.h"

namespace normgrad::decoding {

class StepDecoder {
 public:
  virtual ~StepDecoder() = default;

  // The number of tokens V: every step returns [rows, V].
  virtual std::int64_t vocab_size() const = 0;
  // Where the decoder computes: the search puts its token and row tensors there.
  virtual Device device() const = 0;

  virtual Tensor step(const Tensor& previous_tokens) = 0;
  virtual void reorder(const Tensor& rows) = 0;
};

}  // namespace normgrad::decoding
