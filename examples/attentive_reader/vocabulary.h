#pragma once
// The reader's vocabulary, one for documents, queries and answers, as the attentive reader's
// code has it: a word seen at least `min_count` times in the training questions, else unknown.
// The entity ids come first and in number order, so that an entity's word id is
// entity_base() + its number and a permutation of the numbers is a permutation of ids:
//
//   0            padding (and nothing else)
//   1            a word not in the vocabulary
//   2 ... 2+E-1  @entity0 ... @entity(E-1), E one more than the largest number seen
//   then         the words, most frequent first (ties in byte order), @placeholder among them

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "question_file.h"

namespace attentive_reader {

inline constexpr std::int64_t kPadding = 0;
inline constexpr std::int64_t kUnknown = 1;

class ReaderVocabulary {
 public:
  // Words from the training questions; entity numbers from those and `more` (the validation
  // questions, whose entity numbers may run higher).
  static ReaderVocabulary build(const std::vector<Question>& training, std::int64_t min_count = 2,
                                const std::vector<Question>& more = {});
  // A vocabulary of `entities` entity ids and these words (for timing on made-up questions).
  static ReaderVocabulary of(std::int64_t entities, std::vector<std::string> words);
  // The entity count and the words, one a line after a first line "entities E"; an Error
  // naming the file when it is not one.
  static ReaderVocabulary load(const std::string& path);
  void save(const std::string& path) const;  // atomically

  std::int64_t size() const { return 2 + entities_ + static_cast<std::int64_t>(words_.size()); }
  std::int64_t entities() const { return entities_; }
  std::int64_t entity_base() const { return 2; }
  // A token's id: an entity's by its number (unknown when past E), a word's, or kUnknown.
  std::int64_t id(const std::string& token) const;

 private:
  ReaderVocabulary(std::int64_t entities, std::vector<std::string> words);
  std::int64_t entities_;
  std::vector<std::string> words_;
  std::unordered_map<std::string, std::int64_t> ids_;
};

}  // namespace attentive_reader
