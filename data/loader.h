#pragma once
// DataLoader: mini-batches of (inputs, targets) from two tensors whose first dims are the
// examples. With shuffle, each epoch visits the examples in a new order drawn from the
// loader's own seeded Generator, so a run sees the same batches every time.
//
//   data::DataLoader loader(train.images, train.labels, {.batch_size = 128, .seed = 1});
//   for (int epoch = 0; epoch < 10; ++epoch)
//     for (const auto& [x, y] : loader.epoch()) { ... }

#include <cstdint>
#include <utility>
#include <vector>

#include "core/generator.h"
#include "core/tensor.h"
#include "data/shards.h"

namespace normgrad::data {

struct DataLoaderOptions {
  std::int64_t batch_size = 32;
  bool shuffle = true;
  bool drop_last = false;  // leave out a last batch smaller than batch_size
  std::uint64_t seed = 0;
  // This process's share of each epoch's batches, in data-parallel training (data/shards.h).
  Shard shard{};
};

using Batch = std::pair<Tensor, Tensor>;  // (inputs, targets)

// One epoch's batches, each copied out (index_select) only when it is reached.
class Epoch {
 public:
  Epoch(Tensor inputs, Tensor targets, std::vector<Tensor> indices)
      : inputs_(std::move(inputs)), targets_(std::move(targets)), indices_(std::move(indices)) {}
  std::size_t size() const { return indices_.size(); }
  Batch operator[](std::size_t i) const;

  class Iterator {
   public:
    Iterator(const Epoch* epoch, std::size_t i) : epoch_(epoch), i_(i) {}
    Batch operator*() const { return (*epoch_)[i_]; }
    Iterator& operator++() {
      ++i_;
      return *this;
    }
    bool operator!=(const Iterator& other) const { return i_ != other.i_; }

   private:
    const Epoch* epoch_;
    std::size_t i_;
  };
  Iterator begin() const { return {this, 0}; }
  Iterator end() const { return {this, indices_.size()}; }

 private:
  Tensor inputs_, targets_;
  std::vector<Tensor> indices_;  // int64 [batch] per batch
};

class DataLoader {
 public:
  DataLoader(Tensor inputs, Tensor targets, DataLoaderOptions options = {});

  // The next epoch: a new order when shuffling.
  Epoch epoch();
  std::int64_t batches_per_epoch() const;
  std::int64_t size() const { return inputs_.size(0); }

 private:
  Tensor inputs_, targets_;
  DataLoaderOptions options_;
  Generator generator_;
};

}  // namespace normgrad::data
