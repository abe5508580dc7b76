#include "data/shards.h"

namespace normgrad::data {

void check_shard(const Shard& shard, const std::string& who) {
  NG_CHECK(shard.count >= 1 && shard.index >= 0 && shard.index < shard.count, who, "shard ",
           shard.index, " of ", shard.count,
           ": needs at least one shard and an index from 0 to count - 1");
}

}  // namespace normgrad::data
