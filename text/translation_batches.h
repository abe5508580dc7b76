#pragma once
// Mini-batches of a ParallelDataset, as translation toolkits make them: pairs of similar length
// together so that little of a batch is padding, a batch limit in sentences (the paper's
// RNNSearch: 80) or in tokens (its Transformer: about 25,000), a new order every epoch from a
// seed, and an exact resume position.
//
//   text::TranslationBatches batches(train, {.max_sentences = 80, .seed = 1});
//   while (auto batch = batches.next()) { ... batches.position() ... }   // endless: epoch after
//   epoch
//
// An epoch's batches are a pure function of (seed, epoch): the pairs are sorted by length, ties
// broken by a hash of (seed, epoch, pair), cut into batches greedily, and the batches shuffled
// by a generator seeded with (seed, epoch). So a run resumed at a position sees exactly the
// batches an uninterrupted run would have seen from there.

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "core/tensor.h"
#include "text/parallel_dataset.h"
#include "data/shards.h"

namespace normgrad::text {

struct BatchingOptions {
  // Limits of a batch; at least one must be set, and both apply when both are. Tokens count
  // the padded size of the larger side: rows × (longest sequence + 1, for bos or eos).
  std::int64_t max_sentences = 0;
  std::int64_t max_tokens = 0;
  // false: the batches of every epoch are the same, in order of length (for evaluation; put the
  // results back in corpus order with TranslationBatch::pairs).
  bool shuffle = true;
  std::uint64_t seed = 0;
  // This process's share of each epoch's batches, in data-parallel training (data/shards.h):
  // every process plans the same epoch and takes its own batches of it.
  data::Shard shard{};
};

// What a model takes. Sources end with eos; the decoder reads bos + target and predicts
// target + eos (teacher forcing). Padding is pad_id; the padding masks are 1 at padding (the
// attention layers' "blocked"), and the lengths drive the recurrent layers.
struct TranslationBatch {
  std::vector<std::size_t> pairs;  // dataset indices of the rows
  Tensor source;                   // int64 [B, S]
  Tensor source_lengths;           // int64 [B], eos included
  Tensor source_padding;           // int64 [B, S]
  Tensor target_input;             // int64 [B, T]: bos, y_1 .. y_n
  Tensor target_output;            // int64 [B, T]: y_1 .. y_n, eos
  Tensor target_lengths;           // int64 [B]
  Tensor target_padding;           // int64 [B, T]
  std::int64_t source_tokens = 0;  // real tokens, eos included
  std::int64_t target_tokens = 0;
  std::int64_t padded_tokens = 0;  // B × S + B × T
};

// The position of the next batch: batch `batch` of epoch `epoch`, counting from 0.
struct BatchPosition {
  std::int64_t epoch = 0;
  std::int64_t batch = 0;
  bool operator==(const BatchPosition&) const = default;
};

class TranslationBatches {
 public:
  // An Error for no limit, a negative limit, or an empty dataset. The dataset must outlive this.
  TranslationBatches(const ParallelDataset& dataset, BatchingOptions options,
                     Device device = Device::cpu());

  // The next batch, moving on to the next epoch after an epoch's last batch.
  TranslationBatch next();
  BatchPosition position() const { return position_; }
  // Resumes at a position saved with position(). An Error if batch is beyond its epoch.
  void seek(BatchPosition position);

  // The batches of an epoch (this shard's share), as lists of pair indices.
  std::vector<std::vector<std::size_t>> epoch_plan(std::int64_t epoch) const;
  std::int64_t batches_per_epoch() const { return static_cast<std::int64_t>(current_plan_.size()); }
  // Padding's share of all token slots in an epoch's batches: (padded - real) / padded.
  double padding_share(std::int64_t epoch) const;

  // The tensors of a batch of the given pairs.
  TranslationBatch make_batch(std::span<const std::size_t> pairs) const;

 private:
  void load_plan(std::int64_t epoch);

  const ParallelDataset& dataset_;
  BatchingOptions options_;
  Device device_;
  BatchPosition position_;
  std::int64_t plan_epoch_ = -1;
  std::vector<std::vector<std::size_t>> current_plan_;
};

}  // namespace normgrad::text
