#pragma once
// The binary cache of an encoded parallel corpus (see parallel_dataset.h). Layout, all
// little-endian:
//
//   "NGIDS001"                                 8 bytes
//   source XXH64, target XXH64                 u64 each: the text files it was encoded from
//   tokenizer fingerprint                      16 ASCII hex digits
//   lines, source tokens, target tokens        u64 each
//   source lengths, target lengths             u32 × lines each
//   source ids, target ids                     i32 × tokens each
//   XXH64 of everything above                  u64
//
// A reader trusts nothing: the size must be exactly what the counts imply, the lengths must
// sum to the counts, the checksum must hold, and the key must match. Otherwise the cache is
// not used, and the reason is given.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace normgrad::text {

struct TokenCacheKey {
  std::uint64_t source_hash = 0;
  std::uint64_t target_hash = 0;
  std::string tokenizer_fingerprint;  // 16 hex digits
};

// Every line of both files, encoded, empty and long ones included.
struct EncodedCorpus {
  std::vector<std::uint32_t> source_lengths, target_lengths;
  std::vector<std::int32_t> source_ids, target_ids;
};

// Writes atomically; an Error if the file cannot be written.
void write_token_cache(const std::string& path, const TokenCacheKey& key,
                       const EncodedCorpus& corpus);

// The corpus if `path` holds an intact cache for `key`; otherwise nothing, with the reason in
// `why` ("no cache yet", "the source text changed", "damaged: ...").
std::optional<EncodedCorpus> read_token_cache(const std::string& path, const TokenCacheKey& key,
                                              std::string& why);

std::uint64_t xxh64_of(const std::string& bytes);

}  // namespace normgrad::text
