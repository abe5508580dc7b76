#pragma once
// `order_embedding prepare`: a retrieval data set of the real task's shape, built from a
// parallel corpus this machine has (scripts/build_corpus's English-German segments), for
// users without MS-COCO and its VGG features.
//
//   captions  the English segments, tokenised and lowercased: the text side, as COCO's
//             captions are (one caption per "image": k = 1)
//   images    the German segments, each through a fixed encoding that nobody trains: its words
//             and word pairs hashed into 4096 non-negative tf-idf features (each word into two
//             buckets, idf from the training segments), scaled to unit length. The vector of
//             a German sentence stands where a CNN's vector of a photograph stands.
//
// Retrieving the German "image" of an English caption (and back) is then what the model
// learns: a bilingual lexicon through a GRU, where COCO's is a visual one. Segments with
// fewer than min_words English words, and repeats of an English or a German segment, are left
// out; the rest are split by a hash of the English text into test (5 folds of 1000, as the
// paper's test), dev (1000) and train (at most train_pairs).
//
// The folder is in the layout dataset.h reads, with the feature set named "hashed-bow", plus
// dataset.json (what was built from what) and {train,dev,test}.de (the German segments).

#include <normgrad/normgrad.h>

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

namespace order_embedding {

struct ProxySettings {
  std::string corpus;  // a folder with {train,dev,test}.{en,de}
  std::string out;
  std::int64_t feature_dim = 4096;
  std::int64_t train_pairs = 30000;
  std::int64_t dev_pairs = 1000, test_pairs = 5000;
  std::int64_t min_words = 4, max_words = 40;
};

struct ProxySummary {
  std::int64_t segments = 0;  // read from the corpus
  std::int64_t kept = 0;      // after the length filter and the repeats
  std::int64_t train = 0, dev = 0, test = 0;
};

// The fixed "image" encoding: each word adds its idf to two buckets (two hashes of the word,
// modulo dim), each pair of neighbouring words half their mean idf to one bucket; then the
// vector is scaled to unit length (a segment without words stays 0). idf(w) =
// ln((1 + N) / (1 + df(w))) + 1 over the N training segments, as scikit-learn smooths it.
class HashedFeatures {
 public:
  HashedFeatures(const std::vector<std::vector<std::string>>& training_segments, std::int64_t dim);
  normgrad::Tensor encode(const std::vector<std::vector<std::string>>& segments) const;
  double idf(const std::string& word) const;

 private:
  std::int64_t dim_;
  double documents_;
  std::unordered_map<std::string, std::int64_t> document_frequency_;
};

// Builds the data set; an Error before any writing when the corpus is missing or too small.
ProxySummary build_proxy_data(const ProxySettings& settings);

}  // namespace order_embedding
