#pragma once
// The caption vocabulary as the order-embedding code builds it (its vocab.py): every word of
// the training and dev captions, most frequent first (ties in byte order, so that the same
// captions give the same ids), from id 2 on. Id 0 ends a caption, id 1 is a word not seen.
//
//   Vocabulary vocabulary = Vocabulary::build(train.captions);
//   CaptionBatch batch = vocabulary.batch({"a dog on a sofa", "two cats"});
//   batch.tokens;   // int64 [T, 2]: each caption's ids, then 0, then padding (0)
//   batch.lengths;  // int64 [2]: words + 1, the steps the encoder reads

#include <normgrad/normgrad.h>

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

namespace order_embedding {

inline constexpr std::int64_t kEndOfCaption = 0;
inline constexpr std::int64_t kUnknownWord = 1;

struct CaptionBatch {
  normgrad::Tensor tokens;   // int64 [T, B], time first
  normgrad::Tensor lengths;  // int64 [B]
};

class Vocabulary {
 public:
  static Vocabulary build(const std::vector<std::string>& captions);
  // One word a line, in id order from id 2; an Error naming the file if it cannot be read or
  // repeats a word.
  static Vocabulary load(const std::string& path);
  void save(const std::string& path) const;  // atomically

  std::int64_t size() const { return static_cast<std::int64_t>(words_.size()) + 2; }
  const std::vector<std::string>& words() const { return words_; }
  std::vector<std::int64_t> encode(const std::string& caption) const;
  CaptionBatch batch(const std::vector<std::string>& captions) const;

 private:
  explicit Vocabulary(std::vector<std::string> words);
  std::vector<std::string> words_;
  std::unordered_map<std::string, std::int64_t> ids_;
};

// The words of a caption: split at spaces, as the original code's str.split().
std::vector<std::string> caption_words(const std::string& caption);

}  // namespace order_embedding
