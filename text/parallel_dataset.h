#pragma once
// A parallel corpus as token ids: two aligned UTF-8 text files (line i of the source is the
// translation of line i of the target), encoded once with a SubwordTokenizer and cached in a
// binary file beside the corpus.
//
//   auto tokenizer = text::SubwordTokenizer::load("model/tokenizer.model");
//   auto train = text::ParallelDataset::load("train.en", "train.de", tokenizer, {.max_length =
//   80}); train.source(0);   // the ids of the first kept pair's source, without bos or eos
//
// The cache is checked, not assumed: it records the XXH64 of both text files and the
// tokenizer's fingerprint, and is rebuilt when any of them differs, or when it is damaged.
// Filtering by length happens after the cache, so one cache serves every max_length.

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "text/subword_tokenizer.h"

namespace normgrad::text {

struct ParallelDatasetOptions {
  // Pairs with more tokens than this on either side (bos and eos not counted) are left out;
  // 0 keeps every length. The paper's RNNSearch uses 80.
  std::int64_t max_length = 0;
  bool use_cache = true;
  // Where the cache lives; "" puts it beside the source file, named after both files.
  std::string cache_path{};
};

struct ParallelDatasetStatistics {
  std::size_t lines = 0;  // pairs in the files
  std::size_t kept = 0;
  std::size_t dropped_empty = 0;     // an empty line on either side
  std::size_t dropped_too_long = 0;  // over max_length on either side
  std::int64_t source_tokens = 0;    // of the kept pairs
  std::int64_t target_tokens = 0;
  // How the ids were obtained: "read from the cache", "encoded, cache written", "encoded
  // (cache off)", or "encoded, cache rebuilt: <why>".
  std::string cache;
  std::string cache_path;
};

class ParallelDataset {
 public:
  // Reads, encodes (or loads from the cache) and filters. Missing files, different line counts
  // and invalid UTF-8 are Errors naming the file (and line) before any encoding. A cache that
  // cannot be written (a read-only folder) is reported in statistics().cache, not an Error.
  static ParallelDataset load(const std::string& source_path, const std::string& target_path,
                              const SubwordTokenizer& tokenizer,
                              const ParallelDatasetOptions& options = {});

  std::size_t size() const { return line_.size(); }
  std::span<const std::int32_t> source(std::size_t pair) const;
  std::span<const std::int32_t> target(std::size_t pair) const;
  // The pair's line in the files, counting from 1.
  std::size_t line(std::size_t pair) const { return line_.at(pair); }

  const ParallelDatasetStatistics& statistics() const { return statistics_; }
  const std::string& tokenizer_fingerprint() const { return tokenizer_fingerprint_; }

 private:
  std::vector<std::int32_t> source_ids_, target_ids_;
  std::vector<std::size_t> source_offsets_{0}, target_offsets_{0};  // size() + 1 each
  std::vector<std::size_t> line_;
  ParallelDatasetStatistics statistics_;
  std::string tokenizer_fingerprint_;

  friend struct ParallelDatasetBuilder;
};

// The default cache path for a pair of files: "<source>.<target file name>.ids" beside the
// source ("train.en.train.de.ids").
std::string default_parallel_cache_path(const std::string& source_path,
                                        const std::string& target_path);

}  // namespace normgrad::text
