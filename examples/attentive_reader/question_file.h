#pragma once
// The question files of the CNN and Daily Mail reading-comprehension corpus (Hermann et al.
// 2015), as its generation scripts write them, one question a file (`*.question`):
//
//   http://web.archive.org/...            the article's URL
//                                         (blank)
//   @entity0 ( @entity1 ) -- the ...       the document: tokenised, entities anonymised
//                                         (blank)
//   @entity3 says @placeholder is ...      the query: one entity replaced by @placeholder
//                                         (blank)
//   @entity2                              the answer: an entity of the document
//                                         (blank)
//   @entity0:Atlanta                      one line per entity: its id and the original words
//   @entity1:CNN
//
// The attentive reader reads the document and the query and chooses the answer among the
// document's entities; the entity lines are for people reading the examples.

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace attentive_reader {

inline constexpr const char* kPlaceholder = "@placeholder";

struct Question {
  std::string url;
  std::vector<std::string> document, query;     // tokens
  std::string answer;                           // an entity id, "@entity2"
  std::map<std::string, std::string> entities;  // "@entity2" -> "the words it stands for"
};

// Whether a token is an entity id: "@entity" and digits.
bool is_entity(const std::string& token);

// The entities of a document, each once, in order of first appearance.
std::vector<std::string> document_entities(const std::vector<std::string>& document);

// A question from a file's text; `where` names it in errors. A file that is not in the format
// above (too few parts, no @placeholder in the query, an answer that is not an entity of the
// document, a malformed entity line) is an Error naming `where` and what is wrong.
Question parse_question(const std::string& text, const std::string& where);
Question read_question_file(const std::string& path);

// Every `*.question` file of a folder, in the order of their names (the first max_questions
// when that is positive). An Error for a folder without any.
std::vector<Question> read_question_folder(const std::string& folder,
                                           std::int64_t max_questions = 0);
// The questions of a split ("training", "validation" or "test") of a data folder, in its
// questions/<split>/, as the CNN corpus keeps them.
std::vector<Question> load_questions(const std::string& folder, const std::string& split,
                                     std::int64_t max_questions = 0);

// The text of a question file, the inverse of parse_question (for tests and for the local
// task's files).
std::string question_text(const Question& question);

}  // namespace attentive_reader
