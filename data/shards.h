#pragma once
// Shards of an epoch, for data-parallel training: every process of the job makes the same plan
// of batches (from the same seed), and each takes its own share, dealt out round-robin: shard
// k of n takes batches k, k + n, k + 2n, ... The plan is first cut to a multiple of n, so that
// every shard has as many batches and the processes step together; at most n - 1 batches of
// an epoch are left out, and a new order each epoch leaves out different ones.
//
//   data::Shard shard{.count = group.size(), .index = group.rank()};
//   text::TranslationBatches batches(train, {.max_sentences = 80, .seed = 1, .shard = shard});

#include <cstdint>
#include <string>
#include <vector>

#include "base/error.h"

namespace normgrad::data {

struct Shard {
  std::int64_t count = 1;  // the processes sharing the epochs
  std::int64_t index = 0;  // this one's, 0 to count - 1
  // false: every batch is dealt, the first shards taking one more where the plan does not
  // divide (for evaluation, where every pair counts and the processes need not step together).
  bool equal = true;
  bool operator==(const Shard&) const = default;
};

// An Error naming `who` unless 0 <= index < count.
void check_shard(const Shard& shard, const std::string& who);

// This shard's share of an epoch's `plan`. Equal shares: an Error naming `who` when the plan
// has fewer batches than there are shards (some would have none).
template <class Batch>
std::vector<Batch> take_shard(std::vector<Batch> plan, const Shard& shard, const std::string& who) {
  if (shard.count == 1) return plan;
  const auto batches = static_cast<std::int64_t>(plan.size());
  NG_CHECK(!shard.equal || batches >= shard.count, who, "an epoch has ", batches,
           " batches, fewer than the ", shard.count,
           " shards that share it: use smaller batches or fewer processes");
  const std::int64_t end = shard.equal ? batches / shard.count * shard.count : batches;
  std::vector<Batch> share;
  for (std::int64_t i = shard.index; i < end; i += shard.count)
    share.push_back(std::move(plan[static_cast<std::size_t>(i)]));
  return share;
}

}  // namespace normgrad::data
