#include "vocabulary.h"

#include <algorithm>
#include <map>

#include "common/text_file.h"
#include "text/text_file.h"

namespace order_embedding {

namespace ng = normgrad;

std::vector<std::string> caption_words(const std::string& caption) {
  std::vector<std::string> words;
  std::size_t at = 0;
  while (true) {
    at = caption.find_first_not_of(" \t\r", at);
    if (at == std::string::npos) break;
    const std::size_t end = std::min(caption.find_first_of(" \t\r", at), caption.size());
    words.push_back(caption.substr(at, end - at));
    at = end;
  }
  return words;
}

Vocabulary::Vocabulary(std::vector<std::string> words) : words_(std::move(words)) {
  for (std::size_t i = 0; i < words_.size(); ++i) {
    const bool added = ids_.emplace(words_[i], static_cast<std::int64_t>(i) + 2).second;
    NG_CHECK(added, "order_embedding", "the vocabulary has the word '", words_[i], "' twice");
  }
}

Vocabulary Vocabulary::build(const std::vector<std::string>& captions) {
  std::map<std::string, std::int64_t> counts;
  for (const std::string& caption : captions)
    for (const std::string& word : caption_words(caption)) ++counts[word];
  std::vector<std::pair<std::string, std::int64_t>> sorted(counts.begin(), counts.end());
  std::stable_sort(sorted.begin(), sorted.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  std::vector<std::string> words;
  words.reserve(sorted.size());
  for (auto& entry : sorted) words.push_back(std::move(entry.first));
  return Vocabulary(std::move(words));
}

Vocabulary Vocabulary::load(const std::string& path) {
  std::vector<std::string> words = ng::text::read_text_lines(path);
  while (!words.empty() && words.back().empty()) words.pop_back();
  for (std::size_t i = 0; i < words.size(); ++i)
    NG_CHECK(!words[i].empty() && words[i].find(' ') == std::string::npos, "order_embedding",
             "line ", i + 1, " of the vocabulary '", path, "' is not one word: '", words[i], "'");
  return Vocabulary(std::move(words));
}

void Vocabulary::save(const std::string& path) const {
  std::string text;
  for (const std::string& word : words_) text += word + '\n';
  examples::write_text_file(path, text, "order_embedding");
}

std::vector<std::int64_t> Vocabulary::encode(const std::string& caption) const {
  std::vector<std::int64_t> ids;
  for (const std::string& word : caption_words(caption)) {
    const auto found = ids_.find(word);
    ids.push_back(found == ids_.end() ? kUnknownWord : found->second);
  }
  return ids;
}

CaptionBatch Vocabulary::batch(const std::vector<std::string>& captions) const {
  NG_CHECK(!captions.empty(), "order_embedding", "a batch needs at least one caption");
  std::vector<std::vector<std::int64_t>> encoded;
  std::size_t longest = 0;
  for (const std::string& caption : captions) {
    encoded.push_back(encode(caption));
    longest = std::max(longest, encoded.back().size());
  }
  const std::size_t steps = longest + 1, batch = captions.size();
  std::vector<std::int64_t> tokens(steps * batch, kEndOfCaption), lengths(batch);
  for (std::size_t b = 0; b < batch; ++b) {
    for (std::size_t t = 0; t < encoded[b].size(); ++t) tokens[t * batch + b] = encoded[b][t];
    lengths[b] = static_cast<std::int64_t>(encoded[b].size()) + 1;  // the end token is read too
  }
  return {.tokens = ng::from_vector(
              tokens, {static_cast<std::int64_t>(steps), static_cast<std::int64_t>(batch)}),
          .lengths = ng::from_vector(lengths, {static_cast<std::int64_t>(batch)})};
}

}  // namespace order_embedding
