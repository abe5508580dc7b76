#include "text/parallel_dataset.h"

#include <exception>
#include <filesystem>

#include "base/error.h"
#include "text/text_file.h"
#include "text/token_cache.h"

namespace normgrad::text {
namespace {

// Encodes every line of both sides, on all of normgrad's threads (sentencepiece's encoder is
// thread-safe). Lines differ in length, hence the dynamic schedule.
EncodedCorpus encode_corpus(const std::vector<std::string>& source,
                            const std::vector<std::string>& target,
                            const SubwordTokenizer& tokenizer) {
  const auto n = static_cast<std::int64_t>(source.size());
  std::vector<std::vector<std::int32_t>> source_ids(source.size()), target_ids(target.size());
  std::exception_ptr failure;
#pragma omp parallel for schedule(dynamic, 256)
  for (std::int64_t i = 0; i < n; ++i) {
    try {
      source_ids[i] = tokenizer.encode(source[i]);
      target_ids[i] = tokenizer.encode(target[i]);
    } catch (...) {
#pragma omp critical
      failure = std::current_exception();
    }
  }
  if (failure) std::rethrow_exception(failure);

  EncodedCorpus corpus;
  for (std::size_t i = 0; i < source.size(); ++i) {
    corpus.source_lengths.push_back(static_cast<std::uint32_t>(source_ids[i].size()));
    corpus.target_lengths.push_back(static_cast<std::uint32_t>(target_ids[i].size()));
    corpus.source_ids.insert(corpus.source_ids.end(), source_ids[i].begin(), source_ids[i].end());
    corpus.target_ids.insert(corpus.target_ids.end(), target_ids[i].begin(), target_ids[i].end());
  }
  return corpus;
}

void check_ids(const std::vector<std::int32_t>& ids, std::int32_t vocabulary_size,
               const std::string& cache_path) {
  for (std::int32_t id : ids) {
    if (id < 0 || id >= vocabulary_size) {
      throw Error(detail::concat("ParallelDataset::load: the cache ", cache_path, " holds id ", id,
                                 " outside the tokenizer's vocabulary [0, ", vocabulary_size,
                                 "); delete it to rebuild"));
    }
  }
}

}  // namespace

// Builds a dataset from an encoded corpus, keeping the pairs that pass the filters.
struct ParallelDatasetBuilder {
  static void fill(ParallelDataset& dataset, const EncodedCorpus& corpus, std::int64_t max_length) {
    auto& stats = dataset.statistics_;
    stats.lines = corpus.source_lengths.size();
    std::size_t source_at = 0;
    std::size_t target_at = 0;
    for (std::size_t i = 0; i < stats.lines; ++i) {
      const std::size_t source_length = corpus.source_lengths[i];
      const std::size_t target_length = corpus.target_lengths[i];
      const auto source_begin = corpus.source_ids.begin() + static_cast<std::ptrdiff_t>(source_at);
      const auto target_begin = corpus.target_ids.begin() + static_cast<std::ptrdiff_t>(target_at);
      source_at += source_length;
      target_at += target_length;
      if (source_length == 0 || target_length == 0) {
        ++stats.dropped_empty;
        continue;
      }
      if (max_length > 0 && (source_length > static_cast<std::size_t>(max_length) ||
                             target_length > static_cast<std::size_t>(max_length))) {
        ++stats.dropped_too_long;
        continue;
      }
      dataset.source_ids_.insert(dataset.source_ids_.end(), source_begin,
                                 source_begin + static_cast<std::ptrdiff_t>(source_length));
      dataset.target_ids_.insert(dataset.target_ids_.end(), target_begin,
                                 target_begin + static_cast<std::ptrdiff_t>(target_length));
      dataset.source_offsets_.push_back(dataset.source_ids_.size());
      dataset.target_offsets_.push_back(dataset.target_ids_.size());
      dataset.line_.push_back(i + 1);
    }
    stats.kept = dataset.line_.size();
    stats.source_tokens = static_cast<std::int64_t>(dataset.source_ids_.size());
    stats.target_tokens = static_cast<std::int64_t>(dataset.target_ids_.size());
  }
};

std::string default_parallel_cache_path(const std::string& source_path,
                                        const std::string& target_path) {
  return source_path + "." + std::filesystem::path(target_path).filename().string() + ".ids";
}

ParallelDataset ParallelDataset::load(const std::string& source_path,
                                      const std::string& target_path,
                                      const SubwordTokenizer& tokenizer,
                                      const ParallelDatasetOptions& options) {
  if (options.max_length < 0) {
    throw Error(detail::concat("ParallelDataset::load: max_length must be >= 0 (0: no limit), got ",
                               options.max_length));
  }
  const std::string source_bytes = read_file_bytes(source_path, "ParallelDataset::load");
  const std::string target_bytes = read_file_bytes(target_path, "ParallelDataset::load");
  const TokenCacheKey key{xxh64_of(source_bytes), xxh64_of(target_bytes), tokenizer.fingerprint()};

  ParallelDataset dataset;
  dataset.tokenizer_fingerprint_ = tokenizer.fingerprint();
  auto& stats = dataset.statistics_;
  stats.cache_path =
      options.use_cache
          ? (options.cache_path.empty() ? default_parallel_cache_path(source_path, target_path)
                                        : options.cache_path)
          : "";
  std::optional<EncodedCorpus> corpus;
  std::string why = "cache off";
  if (options.use_cache) corpus = read_token_cache(stats.cache_path, key, why);
  if (corpus) {
    check_ids(corpus->source_ids, tokenizer.vocabulary_size(), stats.cache_path);
    check_ids(corpus->target_ids, tokenizer.vocabulary_size(), stats.cache_path);
    stats.cache = "read from the cache";
  } else {
    const auto source_lines = split_text_lines(source_bytes, source_path);
    const auto target_lines = split_text_lines(target_bytes, target_path);
    if (source_lines.size() != target_lines.size()) {
      throw Error(detail::concat("ParallelDataset::load: ", source_path, " has ",
                                 source_lines.size(), " lines but ", target_path, " has ",
                                 target_lines.size(),
                                 "; line i of one must translate line i of the other"));
    }
    corpus = encode_corpus(source_lines, target_lines, tokenizer);
    if (!options.use_cache) {
      stats.cache = "encoded (cache off)";
    } else {
      const std::string rebuilt =
          why == "no cache yet" ? "encoded, cache written" : "encoded, cache rebuilt: " + why;
      try {
        write_token_cache(stats.cache_path, key, *corpus);
        stats.cache = rebuilt;
      } catch (const Error& error) {
        stats.cache = std::string("encoded, cache not written: ") + error.what();
      }
    }
  }
  ParallelDatasetBuilder::fill(dataset, *corpus, options.max_length);
  return dataset;
}

std::span<const std::int32_t> ParallelDataset::source(std::size_t pair) const {
  if (pair >= size())
    throw Error(detail::concat("ParallelDataset::source: pair ", pair, " of ", size()));
  return {source_ids_.data() + source_offsets_[pair],
          source_offsets_[pair + 1] - source_offsets_[pair]};
}

std::span<const std::int32_t> ParallelDataset::target(std::size_t pair) const {
  if (pair >= size())
    throw Error(detail::concat("ParallelDataset::target: pair ", pair, " of ", size()));
  return {target_ids_.data() + target_offsets_[pair],
          target_offsets_[pair + 1] - target_offsets_[pair]};
}

}  // namespace normgrad::text
