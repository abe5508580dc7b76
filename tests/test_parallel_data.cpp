// ParallelDataset (encoding, the checked cache, length filters) and TranslationBatches
// (length buckets, limits, per-epoch order, exact resume, the tensors a model takes).
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>

#include "text/parallel_dataset.h"
#include "text/text_file.h"
#include "text/translation_batches.h"
#include "helpers.h"
#include "parallel_text_fixture.h"

using namespace normgrad;

namespace {

const text::SubwordTokenizer& shared_tokenizer() {
  static const auto corpus = testing::small_parallel_corpus("parallel_tokenizer");
  static const auto tokenizer =
      text::SubwordTokenizer::train({corpus.source, corpus.target}, {.vocabulary_size = 300});
  return tokenizer;
}

std::string temporary(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("normgrad_test_" + name)).string();
}

void write_file(const std::string& path, const std::string& contents) {
  std::ofstream(path, std::ios::binary) << contents;
}

std::vector<std::int64_t> values_of(const Tensor& t) { return t.to_vector<std::int64_t>(); }

}  // namespace

TEST_CASE("ParallelDataset encodes every pair and drops empty ones") {
  const auto corpus = testing::small_parallel_corpus("parallel_encode", 200);
  // One empty line on the target side.
  auto target_lines = text::read_text_lines(corpus.target);
  target_lines[10].clear();
  std::string text;
  for (const auto& line : target_lines) text += line + "\n";
  write_file(corpus.target, text);
  const auto& tokenizer = shared_tokenizer();
  const auto dataset =
      text::ParallelDataset::load(corpus.source, corpus.target, tokenizer, {.use_cache = false});
  CHECK(dataset.size() == 199);
  CHECK(dataset.statistics().lines == 200);
  CHECK(dataset.statistics().dropped_empty == 1);
  CHECK(dataset.statistics().cache == "encoded (cache off)");
  const auto source_lines = text::read_text_lines(corpus.source);
  for (std::size_t pair : {std::size_t{0}, std::size_t{9}, std::size_t{10}, std::size_t{198}}) {
    const std::size_t line = dataset.line(pair);
    CHECK(line == (pair < 10 ? pair + 1 : pair + 2));
    const auto expected_source = tokenizer.encode(source_lines[line - 1]);
    const auto expected_target = tokenizer.encode(target_lines[line - 1]);
    CHECK(std::vector<std::int32_t>(dataset.source(pair).begin(), dataset.source(pair).end()) ==
          expected_source);
    CHECK(std::vector<std::int32_t>(dataset.target(pair).begin(), dataset.target(pair).end()) ==
          expected_target);
  }
}

TEST_CASE("ParallelDataset's cache is used when it matches and rebuilt when anything changed") {
  const auto corpus = testing::small_parallel_corpus("parallel_cache", 300);
  const auto& tokenizer = shared_tokenizer();
  const std::string cache = text::default_parallel_cache_path(corpus.source, corpus.target);
  std::filesystem::remove(cache);

  const auto first = text::ParallelDataset::load(corpus.source, corpus.target, tokenizer);
  CHECK(first.statistics().cache == "encoded, cache written");
  CHECK(first.statistics().cache_path == cache);
  CHECK(std::filesystem::exists(cache));
  const auto second = text::ParallelDataset::load(corpus.source, corpus.target, tokenizer);
  CHECK(second.statistics().cache == "read from the cache");
  REQUIRE(second.size() == first.size());
  for (std::size_t i = 0; i < first.size(); ++i) {
    CHECK(std::equal(first.source(i).begin(), first.source(i).end(), second.source(i).begin(),
                     second.source(i).end()));
    CHECK(std::equal(first.target(i).begin(), first.target(i).end(), second.target(i).begin(),
                     second.target(i).end()));
  }

  // Another tokenizer.
  const auto other =
      text::SubwordTokenizer::train({corpus.source, corpus.target}, {.vocabulary_size = 280});
  CHECK(text::ParallelDataset::load(corpus.source, corpus.target, other).statistics().cache ==
        "encoded, cache rebuilt: the tokenizer changed");
  CHECK(text::ParallelDataset::load(corpus.source, corpus.target, other).statistics().cache ==
        "read from the cache");

  // Changed text: one character of the target.
  auto target = text::read_file_bytes(corpus.target, "test");
  target[0] = target[0] == 'd' ? 'D' : 'd';
  write_file(corpus.target, target);
  CHECK(text::ParallelDataset::load(corpus.source, corpus.target, other).statistics().cache ==
        "encoded, cache rebuilt: the target text changed");

  // A damaged cache: one byte flipped, then cut short.
  auto bytes = text::read_file_bytes(cache, "test");
  bytes[bytes.size() / 2] ^= 0x40;
  write_file(cache, bytes);
  CHECK(text::ParallelDataset::load(corpus.source, corpus.target, other).statistics().cache ==
        "encoded, cache rebuilt: damaged: its checksum does not match its contents");
  bytes = text::read_file_bytes(cache, "test");
  write_file(cache, bytes.substr(0, bytes.size() - 5));
  CHECK(text::ParallelDataset::load(corpus.source, corpus.target, other)
            .statistics()
            .cache.find("encoded, cache rebuilt: damaged: ") == 0);
  write_file(cache, "junk");
  CHECK(text::ParallelDataset::load(corpus.source, corpus.target, other).statistics().cache ==
        "encoded, cache rebuilt: damaged: not a token cache");
  CHECK(text::ParallelDataset::load(corpus.source, corpus.target, other).statistics().cache ==
        "read from the cache");

  // A cache that cannot be written is reported, not fatal.
  const auto unwritable = text::ParallelDataset::load(
      corpus.source, corpus.target, other, {.cache_path = "/nonexistent/folder/corpus.ids"});
  CHECK(unwritable.statistics().cache.find("encoded, cache not written") == 0);
  CHECK(unwritable.size() == first.size());
  std::filesystem::remove(cache);
}

TEST_CASE("ParallelDataset filters by length on either side, bos and eos not counted") {
  const auto corpus = testing::small_parallel_corpus("parallel_filter", 400);
  const auto& tokenizer = shared_tokenizer();
  const auto all =
      text::ParallelDataset::load(corpus.source, corpus.target, tokenizer, {.use_cache = false});
  const std::int64_t limit = 6;
  std::size_t expected = 0;
  for (std::size_t i = 0; i < all.size(); ++i) {
    expected += all.source(i).size() <= limit && all.target(i).size() <= limit;
  }
  const auto short_pairs = text::ParallelDataset::load(corpus.source, corpus.target, tokenizer,
                                                       {.max_length = limit, .use_cache = false});
  CHECK(short_pairs.size() == expected);
  CHECK(short_pairs.statistics().dropped_too_long == all.size() - expected);
  CHECK(expected > 0);
  CHECK(expected < all.size());
  for (std::size_t i = 0; i < short_pairs.size(); ++i) {
    CHECK(short_pairs.source(i).size() <= limit);
    CHECK(short_pairs.target(i).size() <= limit);
  }
}

TEST_CASE(
    "ParallelDataset refuses missing files, unaligned files and invalid UTF-8 before encoding") {
  const auto& tokenizer = shared_tokenizer();
  const auto corpus = testing::small_parallel_corpus("parallel_bad", 50);
  CHECK_ERROR(text::ParallelDataset::load(corpus.source, "/nonexistent/train.de", tokenizer),
              "/nonexistent/train.de");
  const auto shorter = temporary("shorter.de");
  write_file(shorter, "eins\nzwei\n");
  CHECK_ERROR(text::ParallelDataset::load(corpus.source, shorter, tokenizer, {.use_cache = false}),
              "has 50 lines but", "normgrad_test_shorter.de has 2");
  const auto source = temporary("bad.en");
  const auto target = temporary("bad.de");
  write_file(source, "one\ntwo\nthree\n");
  write_file(target, "eins\nzw\xC3\n drei\n");
  CHECK_ERROR(text::ParallelDataset::load(source, target, tokenizer, {.use_cache = false}),
              "normgrad_test_bad.de line 2", "invalid UTF-8");
  CHECK_ERROR(text::ParallelDataset::load(source, target, tokenizer, {.max_length = -1}),
              "max_length must be >= 0");
}

TEST_CASE("TranslationBatches: every pair once per epoch, limits kept, padding small") {
  const auto corpus = testing::small_parallel_corpus("batches_plan", 600);
  const auto dataset = text::ParallelDataset::load(corpus.source, corpus.target, shared_tokenizer(),
                                                   {.use_cache = false});
  for (const text::BatchingOptions options :
       {text::BatchingOptions{.max_sentences = 32, .seed = 3},
        text::BatchingOptions{.max_tokens = 400, .seed = 3},
        text::BatchingOptions{.max_sentences = 20, .max_tokens = 300, .seed = 3}}) {
    INFO("max_sentences " << options.max_sentences << ", max_tokens " << options.max_tokens);
    text::TranslationBatches batches(dataset, options);
    for (std::int64_t epoch : {0, 1}) {
      std::vector<int> seen(dataset.size(), 0);
      for (const auto& pairs : batches.epoch_plan(epoch)) {
        std::int64_t longest = 0;
        for (std::size_t pair : pairs) {
          ++seen[pair];
          longest = std::max<std::int64_t>(
              longest, static_cast<std::int64_t>(
                           std::max(dataset.source(pair).size(), dataset.target(pair).size())) +
                           1);
        }
        if (options.max_sentences > 0)
          CHECK(static_cast<std::int64_t>(pairs.size()) <= options.max_sentences);
        if (options.max_tokens > 0)
          CHECK(static_cast<std::int64_t>(pairs.size()) * longest <= options.max_tokens);
      }
      CHECK(std::all_of(seen.begin(), seen.end(), [](int count) { return count == 1; }));
    }
  }
  // Length buckets against batches in corpus order: far less padding.
  text::TranslationBatches bucketed(dataset, {.max_sentences = 32, .seed = 3});
  std::int64_t real = 0;
  std::int64_t padded = 0;
  for (std::size_t start = 0; start < dataset.size(); start += 32) {
    std::vector<std::size_t> pairs;
    for (std::size_t i = start; i < std::min(dataset.size(), start + 32); ++i) pairs.push_back(i);
    const auto batch = bucketed.make_batch(pairs);
    real += batch.source_tokens + batch.target_tokens;
    padded += batch.padded_tokens;
  }
  const double unsorted_share = static_cast<double>(padded - real) / static_cast<double>(padded);
  MESSAGE("padding share: bucketed " << bucketed.padding_share(0) << ", corpus order "
                                     << unsorted_share);
  CHECK(bucketed.padding_share(0) < 0.1);
  CHECK(bucketed.padding_share(0) < unsorted_share / 3);
}

TEST_CASE(
    "TranslationBatches: a new order each epoch, the same for the same seed, and exact resume") {
  const auto corpus = testing::small_parallel_corpus("batches_resume", 500);
  const auto dataset = text::ParallelDataset::load(corpus.source, corpus.target, shared_tokenizer(),
                                                   {.use_cache = false});
  const text::BatchingOptions options{.max_sentences = 16, .seed = 11};
  text::TranslationBatches a(dataset, options);
  text::TranslationBatches b(dataset, options);
  CHECK(a.epoch_plan(0) == b.epoch_plan(0));
  CHECK(a.epoch_plan(0) != a.epoch_plan(1));
  CHECK(a.epoch_plan(0) !=
        text::TranslationBatches(dataset, {.max_sentences = 16, .seed = 12}).epoch_plan(0));

  // An uninterrupted run of two and a half epochs...
  const std::int64_t per_epoch = a.batches_per_epoch();
  std::vector<std::vector<std::size_t>> uninterrupted;
  for (std::int64_t i = 0; i < 2 * per_epoch + per_epoch / 2; ++i)
    uninterrupted.push_back(a.next().pairs);
  CHECK(a.position() == text::BatchPosition{2, per_epoch / 2});
  // ...against one stopped in the middle of the second epoch and resumed by a new batcher.
  const std::int64_t stop = per_epoch + 3;
  for (std::int64_t i = 0; i < stop; ++i) CHECK(b.next().pairs == uninterrupted[i]);
  const text::BatchPosition saved = b.position();
  CHECK(saved == text::BatchPosition{1, 3});
  text::TranslationBatches resumed(dataset, options);
  resumed.seek(saved);
  for (std::size_t i = stop; i < uninterrupted.size(); ++i)
    CHECK(resumed.next().pairs == uninterrupted[i]);

  CHECK_ERROR(resumed.seek({0, per_epoch}), "TranslationBatches::seek", "which has");
  CHECK_ERROR(resumed.seek({-1, 0}), "must be >= 0");
  CHECK_ERROR(text::TranslationBatches(dataset, {}), "set max_sentences or max_tokens");
  CHECK_ERROR(text::TranslationBatches(dataset, {.max_tokens = -5}), "max_tokens -5");

  // Without shuffling, every epoch is the same, in order of length.
  text::TranslationBatches ordered(dataset, {.max_sentences = 16, .shuffle = false});
  CHECK(ordered.epoch_plan(0) == ordered.epoch_plan(5));
  std::size_t previous = 0;
  for (const auto& pairs : ordered.epoch_plan(0)) {
    for (std::size_t pair : pairs) {
      CHECK(dataset.source(pair).size() >= previous);
      previous = dataset.source(pair).size();
    }
  }
}

TEST_CASE("TranslationBatches: shards take disjoint, equal shares of every epoch's batches") {
  const auto corpus = testing::small_parallel_corpus("batches_shards", 500);
  const auto dataset = text::ParallelDataset::load(corpus.source, corpus.target, shared_tokenizer(),
                                                   {.use_cache = false});
  const text::BatchingOptions whole{.max_sentences = 16, .seed = 5};
  const text::TranslationBatches unsharded(dataset, whole);
  for (const std::int64_t count : {2, 3}) {
    INFO(count << " shards");
    for (const std::int64_t epoch : {0, 1}) {
      const auto plan = unsharded.epoch_plan(epoch);
      std::vector<std::vector<std::size_t>> dealt;
      for (std::int64_t index = 0; index < count; ++index) {
        text::BatchingOptions options = whole;
        options.shard = {.count = count, .index = index};
        const text::TranslationBatches batches(dataset, options);
        const auto share = batches.epoch_plan(epoch);
        CHECK(std::ssize(share) == std::ssize(plan) / count);
        CHECK(batches.batches_per_epoch() == std::ssize(plan) / count);
        // Batch i of shard k is batch k + i * count of the whole plan.
        for (std::size_t i = 0; i < share.size(); ++i)
          CHECK(share[i] == plan[static_cast<std::size_t>(index) + i * count]);
        dealt.insert(dealt.end(), share.begin(), share.end());
      }
      // Together the shards cover the plan but its last (size mod count) batches, once each.
      std::sort(dealt.begin(), dealt.end());
      auto covered = std::vector(plan.begin(), plan.begin() + std::ssize(plan) / count * count);
      std::sort(covered.begin(), covered.end());
      CHECK(dealt == covered);
    }
  }
  // Unequal shares (evaluation): every batch dealt, the first shards one more.
  const auto plan = unsharded.epoch_plan(0);
  std::size_t dealt = 0;
  for (const std::int64_t index : {0, 1, 2}) {
    const text::TranslationBatches share(
        dataset,
        {.max_sentences = 16, .seed = 5, .shard = {.count = 3, .index = index, .equal = false}});
    CHECK(std::ssize(share.epoch_plan(0)) ==
          (std::ssize(plan) + 2 - index) / 3);  // ceil((size - index) / 3)
    dealt += share.epoch_plan(0).size();
  }
  CHECK(dealt == plan.size());
  CHECK_ERROR(text::TranslationBatches(dataset, {.max_sentences = 16, .shard = {2, 2}}),
              "TranslationBatches", "shard 2 of 2");
  CHECK_ERROR(text::TranslationBatches(dataset, {.max_sentences = 1000, .shard = {2, 0}}),
              "an epoch has 1 batches, fewer than the 2 shards");
}

TEST_CASE("TranslationBatch holds padded ids with bos and eos, lengths and padding masks") {
  const auto source = temporary("tiny.en");
  const auto target = temporary("tiny.de");
  write_file(source, "the file\nthe new file was saved\n");
  write_file(target, "die Datei\ndie neue Datei wurde gespeichert\n");
  const auto& tokenizer = shared_tokenizer();
  const auto dataset = text::ParallelDataset::load(source, target, tokenizer, {.use_cache = false});
  text::TranslationBatches batches(dataset, {.max_sentences = 2, .shuffle = false});
  const std::vector<std::size_t> pairs{1, 0};
  const auto batch = batches.make_batch(pairs);

  const auto x0 = tokenizer.encode("the new file was saved");
  const auto x1 = tokenizer.encode("the file");
  const auto y0 = tokenizer.encode("die neue Datei wurde gespeichert");
  const auto y1 = tokenizer.encode("die Datei");
  const auto S = static_cast<std::int64_t>(x0.size()) + 1;
  const auto T = static_cast<std::int64_t>(y0.size()) + 1;
  REQUIRE(batch.source.shape() == Shape{2, S});
  REQUIRE(batch.target_input.shape() == Shape{2, T});
  std::vector<std::int64_t> source_expected(2 * S, text::pad_id), padding_expected(2 * S, 1);
  std::copy(x0.begin(), x0.end(), source_expected.begin());
  source_expected[S - 1] = text::eos_id;
  std::copy(x1.begin(), x1.end(), source_expected.begin() + S);
  source_expected[S + x1.size()] = text::eos_id;
  std::fill_n(padding_expected.begin(), S, 0);
  std::fill_n(padding_expected.begin() + S, x1.size() + 1, 0);
  CHECK(values_of(batch.source) == source_expected);
  CHECK(values_of(batch.source_padding) == padding_expected);
  CHECK(values_of(batch.source_lengths) ==
        std::vector<std::int64_t>{S, static_cast<std::int64_t>(x1.size()) + 1});

  std::vector<std::int64_t> input_expected(2 * T, text::pad_id),
      output_expected(2 * T, text::pad_id);
  input_expected[0] = text::bos_id;
  std::copy(y0.begin(), y0.end(), input_expected.begin() + 1);
  std::copy(y0.begin(), y0.end(), output_expected.begin());
  output_expected[T - 1] = text::eos_id;
  input_expected[T] = text::bos_id;
  std::copy(y1.begin(), y1.end(), input_expected.begin() + T + 1);
  std::copy(y1.begin(), y1.end(), output_expected.begin() + T);
  output_expected[T + y1.size()] = text::eos_id;
  CHECK(values_of(batch.target_input) == input_expected);
  CHECK(values_of(batch.target_output) == output_expected);
  CHECK(values_of(batch.target_lengths) ==
        std::vector<std::int64_t>{T, static_cast<std::int64_t>(y1.size()) + 1});
  CHECK(batch.source_tokens == S + static_cast<std::int64_t>(x1.size()) + 1);
  CHECK(batch.padded_tokens == 2 * (S + T));
  CHECK(batch.pairs == pairs);
  CHECK_ERROR(batches.make_batch(std::vector<std::size_t>{7}), "pair 7 of a dataset of 2");
}
