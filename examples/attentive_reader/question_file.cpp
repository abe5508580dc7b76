#include "question_file.h"

#include <normgrad/normgrad.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace attentive_reader {

namespace fs = std::filesystem;

namespace {

std::vector<std::string> split_tokens(const std::string& line) {
  std::vector<std::string> tokens;
  std::istringstream in(line);
  std::string token;
  while (in >> token) tokens.push_back(token);
  return tokens;
}

std::string join(const std::vector<std::string>& tokens) {
  std::string text;
  for (const std::string& token : tokens) text += (text.empty() ? "" : " ") + token;
  return text;
}

}  // namespace

bool is_entity(const std::string& token) {
  constexpr std::string_view prefix = "@entity";
  return token.size() > prefix.size() && token.compare(0, prefix.size(), prefix) == 0 &&
         std::all_of(token.begin() + static_cast<std::ptrdiff_t>(prefix.size()), token.end(),
                     [](char c) { return c >= '0' && c <= '9'; });
}

std::vector<std::string> document_entities(const std::vector<std::string>& document) {
  std::vector<std::string> entities;
  for (const std::string& token : document)
    if (is_entity(token) && std::find(entities.begin(), entities.end(), token) == entities.end())
      entities.push_back(token);
  return entities;
}

Question parse_question(const std::string& text, const std::string& where) {
  // Lines, with a Windows line end taken off.
  std::vector<std::string> lines;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    lines.push_back(line);
  }
  // URL, document, query, answer at lines 0, 2, 4, 6; blank lines between; entities from 8.
  NG_CHECK(lines.size() >= 7, "attentive_reader", where,
           ": a question file has a URL, a "
           "document, a query and an answer, each followed by a blank line; this one has ",
           lines.size(), " lines");
  for (const std::size_t blank : {std::size_t{1}, std::size_t{3}, std::size_t{5}})
    NG_CHECK(lines[blank].find_first_not_of(" \t") == std::string::npos, "attentive_reader", where,
             ": line ", blank + 1, " should be blank, got '", lines[blank], "'");
  Question question;
  question.url = lines[0];
  question.document = split_tokens(lines[2]);
  question.query = split_tokens(lines[4]);
  const std::vector<std::string> answer = split_tokens(lines[6]);
  NG_CHECK(!question.document.empty(), "attentive_reader", where, ": the document is empty");
  NG_CHECK(std::count(question.query.begin(), question.query.end(), kPlaceholder) == 1,
           "attentive_reader", where, ": the query must hold @placeholder once: '", lines[4], "'");
  NG_CHECK(answer.size() == 1 && is_entity(answer[0]), "attentive_reader", where,
           ": the answer must be one entity id such as @entity3, got '", lines[6], "'");
  question.answer = answer[0];
  NG_CHECK(std::find(question.document.begin(), question.document.end(), question.answer) !=
               question.document.end(),
           "attentive_reader", where, ": the answer ", question.answer,
           " does not occur in the document");
  for (std::size_t i = 8; i < lines.size(); ++i) {
    if (lines[i].find_first_not_of(" \t") == std::string::npos) continue;
    const std::size_t colon = lines[i].find(':');
    NG_CHECK(colon != std::string::npos && is_entity(lines[i].substr(0, colon)), "attentive_reader",
             where, ": line ", i + 1, " should be an entity line such as @entity3:Atlanta, got '",
             lines[i], "'");
    question.entities[lines[i].substr(0, colon)] = lines[i].substr(colon + 1);
  }
  return question;
}

Question read_question_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  NG_CHECK(in.good(), "attentive_reader", "cannot open the question file '", path, "'");
  std::ostringstream text;
  text << in.rdbuf();
  return parse_question(text.str(), "'" + path + "'");
}

std::vector<Question> read_question_folder(const std::string& folder, std::int64_t max_questions) {
  std::error_code error;
  NG_CHECK(fs::is_directory(folder, error), "attentive_reader", "'", folder,
           "' is not a folder of .question files");
  std::vector<fs::path> files;
  for (const fs::directory_entry& entry : fs::directory_iterator(folder))
    if (entry.is_regular_file() && entry.path().extension() == ".question")
      files.push_back(entry.path());
  NG_CHECK(!files.empty(), "attentive_reader", "'", folder, "' holds no .question files");
  std::sort(files.begin(), files.end());
  if (max_questions > 0 && static_cast<std::int64_t>(files.size()) > max_questions)
    files.resize(static_cast<std::size_t>(max_questions));
  std::vector<Question> questions;
  questions.reserve(files.size());
  for (const fs::path& file : files) questions.push_back(read_question_file(file.string()));
  return questions;
}

std::vector<Question> load_questions(const std::string& folder, const std::string& split,
                                     std::int64_t max_questions) {
  return read_question_folder(folder + "/questions/" + split, max_questions);
}

std::string question_text(const Question& question) {
  std::string text = question.url + "\n\n" + join(question.document) + "\n\n" +
                     join(question.query) + "\n\n" + question.answer + "\n\n";
  for (const auto& [id, words] : question.entities) text += id + ":" + words + "\n";
  return text;
}

}  // namespace attentive_reader
