#include "data/loader.h"

#include <algorithm>

#include "autograd/ops.h"
#include "base/error.h"

namespace normgrad::data {

DataLoader::DataLoader(Tensor inputs, Tensor targets, DataLoaderOptions options)
    : inputs_(std::move(inputs)),
      targets_(std::move(targets)),
      options_(options),
      generator_(options.seed) {
  NG_CHECK(inputs_.defined() && targets_.defined() && inputs_.dim() >= 1 && targets_.dim() >= 1,
           "DataLoader", "inputs and targets must be defined and at least 1-d");
  NG_CHECK(inputs_.size(0) == targets_.size(0), "DataLoader", "inputs ", inputs_.shape(),
           " and targets ", targets_.shape(), " differ in their number of examples");
  NG_CHECK(options_.batch_size > 0, "DataLoader", "batch_size must be positive, got ",
           options_.batch_size);
  check_shard(options_.shard, "DataLoader");
}

std::int64_t DataLoader::batches_per_epoch() const {
  const std::int64_t n = size(), b = options_.batch_size;
  const std::int64_t batches = options_.drop_last ? n / b : (n + b - 1) / b;
  const Shard& shard = options_.shard;
  return shard.equal ? batches / shard.count
                     : (batches - shard.index + shard.count - 1) / shard.count;
}

Batch Epoch::operator[](std::size_t i) const {
  NG_CHECK(i < indices_.size(), "Epoch", "batch ", i, " is out of range for ", indices_.size(),
           " batches");
  return {index_select(inputs_, 0, indices_[i]), index_select(targets_, 0, indices_[i])};
}

Epoch DataLoader::epoch() {
  const std::int64_t n = size();
  // A random permutation: the order of n uniform keys, drawn from the loader's generator.
  std::vector<std::int64_t> order(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) order[static_cast<std::size_t>(i)] = i;
  if (options_.shuffle && n > 1) {
    const std::vector<double> keys =
        rand({n}, generator_, {.dtype = DType::Float64}).to_vector<double>();
    std::stable_sort(order.begin(), order.end(),
                     [&](std::int64_t a, std::int64_t b) { return keys[a] < keys[b]; });
  }
  std::vector<Tensor> batches;
  for (std::int64_t first = 0; first < n; first += options_.batch_size) {
    const std::int64_t count = std::min(options_.batch_size, n - first);
    if (options_.drop_last && count < options_.batch_size) break;
    const Tensor index = from_vector(
        std::vector<std::int64_t>(order.begin() + first, order.begin() + first + count), {count});
    batches.push_back(index);
  }
  return Epoch(inputs_, targets_, take_shard(std::move(batches), options_.shard, "DataLoader"));
}

}  // namespace normgrad::data
