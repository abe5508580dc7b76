#include "text/translation_batches.h"

#include <algorithm>
#include <numeric>

#include "base/error.h"
#include "text/subword_tokenizer.h"

namespace normgrad::text {
namespace {

// SplitMix64's finaliser: a well-mixed 64-bit hash, the same on every platform.
std::uint64_t mix(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

std::uint64_t epoch_key(std::uint64_t seed, std::int64_t epoch) {
  return mix(mix(seed) ^ static_cast<std::uint64_t>(epoch));
}

Tensor int64_tensor(const std::vector<std::int64_t>& values, std::int64_t rows,
                    std::int64_t columns, Device device) {
  Tensor t = from_vector(values, Shape{rows, columns});
  return device.is_cpu() ? t : t.to(device);
}

Tensor int64_vector(const std::vector<std::int64_t>& values, Device device) {
  Tensor t = from_vector(values, Shape{static_cast<std::int64_t>(values.size())});
  return device.is_cpu() ? t : t.to(device);
}

}  // namespace

TranslationBatches::TranslationBatches(const ParallelDataset& dataset, BatchingOptions options,
                                       Device device)
    : dataset_(dataset), options_(options), device_(device) {
  if (options.max_sentences < 0 || options.max_tokens < 0 ||
      (options.max_sentences == 0 && options.max_tokens == 0)) {
    throw Error(detail::concat(
        "TranslationBatches: set max_sentences or max_tokens (or both) to a positive "
        "limit; got max_sentences ",
        options.max_sentences, " and max_tokens ", options.max_tokens));
  }
  if (dataset.size() == 0) throw Error("TranslationBatches: the dataset has no pairs");
  data::check_shard(options.shard, "TranslationBatches");
  load_plan(0);
}

std::vector<std::vector<std::size_t>> TranslationBatches::epoch_plan(std::int64_t epoch) const {
  if (epoch < 0)
    throw Error(detail::concat("TranslationBatches::epoch_plan: epoch must be >= 0, got ", epoch));
  const std::size_t n = dataset_.size();
  const std::uint64_t key = options_.shuffle ? epoch_key(options_.seed, epoch) : 0;
  // Sort by (source length, target length, tie key): similar lengths meet in a batch, and which
  // equal-length pairs meet changes from epoch to epoch.
  struct Entry {
    std::uint32_t source_length, target_length;
    std::uint64_t tie;
    std::size_t pair;
  };
  std::vector<Entry> entries(n);
  for (std::size_t i = 0; i < n; ++i) {
    entries[i] = {static_cast<std::uint32_t>(dataset_.source(i).size()),
                  static_cast<std::uint32_t>(dataset_.target(i).size()),
                  options_.shuffle ? mix(key ^ i) : i, i};
  }
  std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
    if (a.source_length != b.source_length) return a.source_length < b.source_length;
    if (a.target_length != b.target_length) return a.target_length < b.target_length;
    return a.tie < b.tie;
  });

  // Cut greedily: a pair joins the batch unless it would break a limit. A single pair longer
  // than max_tokens still makes a batch of its own rather than being lost.
  std::vector<std::vector<std::size_t>> plan;
  std::vector<std::size_t> batch;
  std::int64_t longest = 0;
  for (const Entry& e : entries) {
    const std::int64_t length = std::max<std::int64_t>(e.source_length, e.target_length) + 1;
    const auto rows = static_cast<std::int64_t>(batch.size()) + 1;
    const bool too_many = options_.max_sentences > 0 && rows > options_.max_sentences;
    const bool too_large =
        options_.max_tokens > 0 && rows * std::max(longest, length) > options_.max_tokens;
    if (!batch.empty() && (too_many || too_large)) {
      plan.push_back(std::move(batch));
      batch.clear();
      longest = 0;
    }
    batch.push_back(e.pair);
    longest = std::max(longest, length);
  }
  if (!batch.empty()) plan.push_back(std::move(batch));

  if (options_.shuffle) {
    // Fisher-Yates with SplitMix64 draws: the order of the batches within the epoch.
    std::uint64_t state = key;
    for (std::size_t i = plan.size(); i > 1; --i) {
      state = mix(state);
      std::swap(plan[i - 1], plan[state % i]);
    }
  }
  return data::take_shard(std::move(plan), options_.shard, "TranslationBatches");
}

void TranslationBatches::load_plan(std::int64_t epoch) {
  if (plan_epoch_ == epoch) return;
  // Without shuffling every epoch has the same plan.
  if (!options_.shuffle && plan_epoch_ >= 0) {
    plan_epoch_ = epoch;
    return;
  }
  current_plan_ = epoch_plan(epoch);
  plan_epoch_ = epoch;
}

TranslationBatch TranslationBatches::next() {
  load_plan(position_.epoch);
  const auto& pairs = current_plan_[static_cast<std::size_t>(position_.batch)];
  TranslationBatch batch = make_batch(pairs);
  if (++position_.batch == batches_per_epoch()) {
    ++position_.epoch;
    position_.batch = 0;
  }
  return batch;
}

void TranslationBatches::seek(BatchPosition position) {
  if (position.epoch < 0 || position.batch < 0) {
    throw Error(detail::concat("TranslationBatches::seek: epoch ", position.epoch, " and batch ",
                               position.batch, " must be >= 0"));
  }
  load_plan(position.epoch);
  if (position.batch >= batches_per_epoch()) {
    throw Error(detail::concat("TranslationBatches::seek: batch ", position.batch, " of epoch ",
                               position.epoch, ", which has ", batches_per_epoch(), " batches"));
  }
  position_ = position;
}

double TranslationBatches::padding_share(std::int64_t epoch) const {
  std::int64_t real = 0;
  std::int64_t padded = 0;
  for (const auto& pairs : epoch_plan(epoch)) {
    std::int64_t longest_source = 0;
    std::int64_t longest_target = 0;
    for (std::size_t pair : pairs) {
      const auto s = static_cast<std::int64_t>(dataset_.source(pair).size()) + 1;
      const auto t = static_cast<std::int64_t>(dataset_.target(pair).size()) + 1;
      real += s + t;
      longest_source = std::max(longest_source, s);
      longest_target = std::max(longest_target, t);
    }
    padded += static_cast<std::int64_t>(pairs.size()) * (longest_source + longest_target);
  }
  return padded == 0 ? 0.0 : static_cast<double>(padded - real) / static_cast<double>(padded);
}

TranslationBatch TranslationBatches::make_batch(std::span<const std::size_t> pairs) const {
  if (pairs.empty()) throw Error("TranslationBatches::make_batch: no pairs");
  TranslationBatch batch;
  batch.pairs.assign(pairs.begin(), pairs.end());
  const auto rows = static_cast<std::int64_t>(pairs.size());
  std::int64_t source_width = 0;
  std::int64_t target_width = 0;
  for (std::size_t pair : pairs) {
    if (pair >= dataset_.size()) {
      throw Error(detail::concat("TranslationBatches::make_batch: pair ", pair, " of a dataset of ",
                                 dataset_.size()));
    }
    source_width = std::max<std::int64_t>(
        source_width, static_cast<std::int64_t>(dataset_.source(pair).size()) + 1);
    target_width = std::max<std::int64_t>(
        target_width, static_cast<std::int64_t>(dataset_.target(pair).size()) + 1);
  }
  std::vector<std::int64_t> source(rows * source_width, pad_id),
      source_padding(rows * source_width, 1);
  std::vector<std::int64_t> target_input(rows * target_width, pad_id),
      target_output(rows * target_width, pad_id), target_padding(rows * target_width, 1);
  std::vector<std::int64_t> source_lengths(rows), target_lengths(rows);
  for (std::int64_t r = 0; r < rows; ++r) {
    const auto x = dataset_.source(pairs[r]);
    const auto y = dataset_.target(pairs[r]);
    const auto s = static_cast<std::int64_t>(x.size());
    const auto t = static_cast<std::int64_t>(y.size());
    std::int64_t* source_row = source.data() + r * source_width;
    std::copy(x.begin(), x.end(), source_row);
    source_row[s] = eos_id;
    std::fill_n(source_padding.begin() + r * source_width, s + 1, 0);
    std::int64_t* input_row = target_input.data() + r * target_width;
    std::int64_t* output_row = target_output.data() + r * target_width;
    input_row[0] = bos_id;
    std::copy(y.begin(), y.end(), input_row + 1);
    std::copy(y.begin(), y.end(), output_row);
    output_row[t] = eos_id;
    std::fill_n(target_padding.begin() + r * target_width, t + 1, 0);
    source_lengths[r] = s + 1;
    target_lengths[r] = t + 1;
    batch.source_tokens += s + 1;
    batch.target_tokens += t + 1;
  }
  batch.padded_tokens = rows * (source_width + target_width);
  batch.source = int64_tensor(source, rows, source_width, device_);
  batch.source_padding = int64_tensor(source_padding, rows, source_width, device_);
  batch.source_lengths = int64_vector(source_lengths, device_);
  batch.target_input = int64_tensor(target_input, rows, target_width, device_);
  batch.target_output = int64_tensor(target_output, rows, target_width, device_);
  batch.target_padding = int64_tensor(target_padding, rows, target_width, device_);
  batch.target_lengths = int64_vector(target_lengths, device_);
  return batch;
}

}  // namespace normgrad::text
