#include "vocabulary.h"

#include <normgrad/normgrad.h>

#include <algorithm>
#include <map>

#include "common/text_file.h"
#include "text/text_file.h"

namespace attentive_reader {

namespace {

std::int64_t entity_number(const std::string& token) {
  return std::stoll(token.substr(7));  // after "@entity"; is_entity has checked the digits
}

}  // namespace

ReaderVocabulary::ReaderVocabulary(std::int64_t entities, std::vector<std::string> words)
    : entities_(entities), words_(std::move(words)) {
  for (std::size_t i = 0; i < words_.size(); ++i) {
    NG_CHECK(!is_entity(words_[i]), "attentive_reader", "the vocabulary lists the entity ",
             words_[i], " among its words");
    const bool added = ids_.emplace(words_[i], 2 + entities_ + static_cast<std::int64_t>(i)).second;
    NG_CHECK(added, "attentive_reader", "the vocabulary has the word '", words_[i], "' twice");
  }
}

ReaderVocabulary ReaderVocabulary::build(const std::vector<Question>& training,
                                         std::int64_t min_count,
                                         const std::vector<Question>& more) {
  std::map<std::string, std::int64_t> counts;
  std::int64_t entities = 0;
  const auto count = [&](const std::vector<std::string>& tokens) {
    for (const std::string& token : tokens) {
      if (is_entity(token))
        entities = std::max(entities, entity_number(token) + 1);
      else
        ++counts[token];
    }
  };
  for (const Question& question : training) {
    count(question.document);
    count(question.query);
    entities = std::max(entities, entity_number(question.answer) + 1);
  }
  for (const Question& question : more)
    for (const auto* tokens : {&question.document, &question.query})
      for (const std::string& token : *tokens)
        if (is_entity(token)) entities = std::max(entities, entity_number(token) + 1);
  std::vector<std::pair<std::string, std::int64_t>> sorted;
  for (const auto& [word, n] : counts)
    if (n >= min_count) sorted.emplace_back(word, n);
  std::stable_sort(sorted.begin(), sorted.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  std::vector<std::string> words;
  for (auto& entry : sorted) words.push_back(std::move(entry.first));
  return ReaderVocabulary(entities, std::move(words));
}

ReaderVocabulary ReaderVocabulary::of(std::int64_t entities, std::vector<std::string> words) {
  NG_CHECK(entities >= 0, "attentive_reader", "a vocabulary needs 0 or more entities, got ",
           entities);
  return ReaderVocabulary(entities, std::move(words));
}

ReaderVocabulary ReaderVocabulary::load(const std::string& path) {
  std::vector<std::string> lines = normgrad::text::read_text_lines(path);
  while (!lines.empty() && lines.back().empty()) lines.pop_back();
  std::int64_t entities = -1;
  try {
    std::size_t used = 0;
    if (!lines.empty() && lines[0].rfind("entities ", 0) == 0)
      entities = std::stoll(lines[0].substr(9), &used);
    if (used != lines[0].size() - 9) entities = -1;
  } catch (const std::exception&) {
    entities = -1;
  }
  NG_CHECK(entities >= 0, "attentive_reader", "'", path,
           "' is not a reader vocabulary: its first line is not \"entities N\"");
  for (std::size_t i = 1; i < lines.size(); ++i)
    NG_CHECK(!lines[i].empty() && lines[i].find(' ') == std::string::npos, "attentive_reader",
             "line ", i + 1, " of the vocabulary '", path, "' is not one word: '", lines[i], "'");
  return ReaderVocabulary(entities, std::vector<std::string>(lines.begin() + 1, lines.end()));
}

void ReaderVocabulary::save(const std::string& path) const {
  std::string text = "entities " + std::to_string(entities_) + "\n";
  for (const std::string& word : words_) text += word + '\n';
  examples::write_text_file(path, text, "attentive_reader");
}

std::int64_t ReaderVocabulary::id(const std::string& token) const {
  if (is_entity(token)) {
    const std::int64_t number = token.size() > 25 ? entities_ : entity_number(token);
    return number < entities_ ? entity_base() + number : kUnknown;
  }
  const auto found = ids_.find(token);
  return found == ids_.end() ? kUnknown : found->second;
}

}  // namespace attentive_reader
