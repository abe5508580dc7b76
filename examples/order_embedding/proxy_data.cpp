#include "proxy_data.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string_view>
#include <unordered_set>

#include "common/text_file.h"
#include "common/word_tokens.h"
#include "text/text_file.h"

namespace order_embedding {

namespace ng = normgrad;
namespace fs = std::filesystem;

namespace {

// 64-bit FNV-1a, salted: the same buckets on every platform and every run.
std::uint64_t fnv1a(std::string_view text, std::uint64_t salt) {
  std::uint64_t hash = 14695981039346656037ull ^ salt;
  for (const char c : text) {
    hash ^= static_cast<unsigned char>(c);
    hash *= 1099511628211ull;
  }
  return hash;
}

std::string join(const std::vector<std::string>& words) {
  std::string text;
  for (const std::string& word : words) text += (text.empty() ? "" : " ") + word;
  return text;
}

struct Pair {
  std::vector<std::string> english, german;
  std::uint64_t hash = 0;  // of the English text: decides the split
};

}  // namespace

HashedFeatures::HashedFeatures(const std::vector<std::vector<std::string>>& training_segments,
                               std::int64_t dim)
    : dim_(dim), documents_(static_cast<double>(training_segments.size())) {
  NG_CHECK(dim >= 1, "order_embedding", "the feature dim must be positive, got ", dim);
  for (const auto& segment : training_segments) {
    const std::unordered_set<std::string> words(segment.begin(), segment.end());
    for (const std::string& word : words) ++document_frequency_[word];
  }
}

double HashedFeatures::idf(const std::string& word) const {
  const auto found = document_frequency_.find(word);
  const double df = found == document_frequency_.end() ? 0.0 : static_cast<double>(found->second);
  return std::log((1 + documents_) / (1 + df)) + 1;
}

ng::Tensor HashedFeatures::encode(const std::vector<std::vector<std::string>>& segments) const {
  const auto rows = static_cast<std::int64_t>(segments.size());
  std::vector<float> values(static_cast<std::size_t>(rows * dim_), 0.0f);
  const auto bucket = [&](std::string_view key, std::uint64_t salt) {
    return static_cast<std::size_t>(fnv1a(key, salt) % static_cast<std::uint64_t>(dim_));
  };
  std::vector<double> row(static_cast<std::size_t>(dim_));
  for (std::int64_t n = 0; n < rows; ++n) {
    std::fill(row.begin(), row.end(), 0.0);
    const auto& words = segments[static_cast<std::size_t>(n)];
    for (std::size_t i = 0; i < words.size(); ++i) {
      const double weight = idf(words[i]);
      row[bucket(words[i], 1)] += weight;
      row[bucket(words[i], 2)] += weight;
      if (i + 1 < words.size())
        row[bucket(words[i] + ' ' + words[i + 1], 3)] += 0.25 * (weight + idf(words[i + 1]));
    }
    double norm = 0;
    for (const double v : row) norm += v * v;
    norm = std::sqrt(norm);
    if (norm > 0)
      for (std::int64_t d = 0; d < dim_; ++d)
        values[static_cast<std::size_t>(n * dim_ + d)] =
            static_cast<float>(row[static_cast<std::size_t>(d)] / norm);
  }
  return ng::from_vector(values, {rows, dim_});
}

ProxySummary build_proxy_data(const ProxySettings& settings) {
  NG_CHECK(settings.min_words >= 1 && settings.max_words >= settings.min_words, "order_embedding",
           "--min-words and --max-words must satisfy 1 <= min <= max, got ", settings.min_words,
           " and ", settings.max_words);
  NG_CHECK(settings.train_pairs >= 2 && settings.dev_pairs >= 1 && settings.test_pairs >= 1,
           "order_embedding", "--train-pairs must be at least 2 and the dev and test pairs 1");
  ProxySummary summary;
  std::vector<Pair> pairs;
  std::unordered_set<std::string> english_seen, german_seen;
  for (const char* split : {"train", "dev", "test"}) {
    const fs::path english = fs::path(settings.corpus) / (std::string(split) + ".en");
    const fs::path german = fs::path(settings.corpus) / (std::string(split) + ".de");
    NG_CHECK(fs::exists(english) && fs::exists(german), "order_embedding", "'", settings.corpus,
             "' lacks ", english.filename().string(), " or ", german.filename().string(),
             ": give a folder of parallel text (scripts/build_corpus writes one)");
    const std::vector<std::string> en = ng::text::read_text_lines(english.string());
    const std::vector<std::string> de = ng::text::read_text_lines(german.string());
    NG_CHECK(en.size() == de.size(), "order_embedding", "'", english.string(), "' has ", en.size(),
             " lines but '", german.string(), "' has ", de.size());
    for (std::size_t i = 0; i < en.size(); ++i) {
      ++summary.segments;
      Pair pair{examples::word_tokens(en[i]), examples::word_tokens(de[i]), 0};
      const auto words = static_cast<std::int64_t>(pair.english.size());
      if (words < settings.min_words || words > settings.max_words || pair.german.empty()) continue;
      const std::string english_text = join(pair.english), german_text = join(pair.german);
      if (!english_seen.insert(english_text).second || !german_seen.insert(german_text).second)
        continue;
      pair.hash = fnv1a(english_text, 0);
      pairs.push_back(std::move(pair));
    }
  }
  summary.kept = static_cast<std::int64_t>(pairs.size());
  NG_CHECK(summary.kept >= settings.test_pairs + settings.dev_pairs + 2, "order_embedding", "'",
           settings.corpus, "' has ", summary.kept, " usable pairs (of ", summary.segments,
           " segments), fewer than the ", settings.test_pairs, " test and ", settings.dev_pairs,
           " dev pairs and 2 for training");

  // The split: by the hash of the English text, then each part back in the corpus's order.
  std::vector<std::size_t> by_hash(pairs.size());
  for (std::size_t i = 0; i < by_hash.size(); ++i) by_hash[i] = i;
  std::sort(by_hash.begin(), by_hash.end(), [&](std::size_t a, std::size_t b) {
    return pairs[a].hash != pairs[b].hash ? pairs[a].hash < pairs[b].hash : a < b;
  });
  const auto test_end = static_cast<std::ptrdiff_t>(settings.test_pairs);
  const auto dev_end = test_end + static_cast<std::ptrdiff_t>(settings.dev_pairs);
  std::vector<std::size_t> test(by_hash.begin(), by_hash.begin() + test_end);
  std::vector<std::size_t> dev(by_hash.begin() + test_end, by_hash.begin() + dev_end);
  std::vector<std::size_t> train(by_hash.begin() + dev_end, by_hash.end());
  for (auto* part : {&test, &dev, &train}) std::sort(part->begin(), part->end());
  if (static_cast<std::int64_t>(train.size()) > settings.train_pairs)
    train.resize(static_cast<std::size_t>(settings.train_pairs));
  summary.train = static_cast<std::int64_t>(train.size());
  summary.dev = static_cast<std::int64_t>(dev.size());
  summary.test = static_cast<std::int64_t>(test.size());

  const auto german_of = [&](const std::vector<std::size_t>& part) {
    std::vector<std::vector<std::string>> segments;
    for (const std::size_t i : part) segments.push_back(pairs[i].german);
    return segments;
  };
  const HashedFeatures features(german_of(train), settings.feature_dim);
  const fs::path out(settings.out);
  fs::create_directories(out / "images" / "hashed-bow");
  for (const auto& [name, part] :
       {std::pair{"train", &train}, std::pair{"dev", &dev}, std::pair{"test", &test}}) {
    std::string english, german;
    for (const std::size_t i : *part) {
      english += join(pairs[i].english) + '\n';
      german += join(pairs[i].german) + '\n';
    }
    examples::write_text_file((out / (std::string(name) + ".txt")).string(), english,
                              "order_embedding");
    examples::write_text_file((out / (std::string(name) + ".de")).string(), german,
                              "order_embedding");
    ng::data::write_npy((out / "images" / "hashed-bow" / (std::string(name) + ".npy")).string(),
                        features.encode(german_of(*part)));
  }
  const nlohmann::json description = {
      {"built_by", "order_embedding prepare"},
      {"corpus", fs::absolute(settings.corpus).lexically_normal().string()},
      {"captions", "English segments, lowercased, punctuation split off; one per image"},
      {"images",
       "German segments as hashed tf-idf bags of words and word pairs, unit length (hashed-bow)"},
      {"feature_dim", settings.feature_dim},
      {"min_words", settings.min_words},
      {"max_words", settings.max_words},
      {"segments", summary.segments},
      {"kept", summary.kept},
      {"train", summary.train},
      {"dev", summary.dev},
      {"test", summary.test}};
  examples::write_text_file((out / "dataset.json").string(), description.dump(2) + "\n",
                            "order_embedding");
  return summary;
}

}  // namespace order_embedding
