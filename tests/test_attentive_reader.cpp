// examples/attentive_reader: the CNN corpus's question files (read, written, refused when
// damaged) and the cloze task built from a parallel corpus.

#include <filesystem>
#include <fstream>
#include <set>

#include "attentive_reader/local_task.h"
#include "attentive_reader/question_file.h"
#include "helpers.h"
#include "scratch_folder.h"

using namespace normgrad;
using namespace attentive_reader;
namespace fs = std::filesystem;

namespace {

// A question as the CNN corpus has them (its format, with words of our own).
const char* const kQuestion =
    "http://web.archive.org/web/2015/http://www.cnn.com/2015/example\n"
    "\n"
    "@entity0 ( @entity1 ) -- the mayor of @entity0 opened a bridge on monday , @entity2 said .\n"
    "\n"
    "the bridge in @placeholder was opened by its mayor\n"
    "\n"
    "@entity0\n"
    "\n"
    "@entity0:Atlanta\n"
    "@entity1:CNN\n"
    "@entity2:officials\n";

void write_file(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

}  // namespace

TEST_CASE("question files: the CNN corpus's format read, and written back the same") {
  const Question question = parse_question(kQuestion, "example");
  CHECK(question.url == "http://web.archive.org/web/2015/http://www.cnn.com/2015/example");
  CHECK(question.document.size() == 18);
  CHECK(question.document[2] == "@entity1");
  CHECK(question.query == std::vector<std::string>{"the", "bridge", "in", "@placeholder", "was",
                                                   "opened", "by", "its", "mayor"});
  CHECK(question.answer == "@entity0");
  CHECK(question.entities.at("@entity1") == "CNN");
  CHECK(document_entities(question.document) ==
        std::vector<std::string>{"@entity0", "@entity1", "@entity2"});
  CHECK(is_entity("@entity12"));
  CHECK_FALSE(is_entity("@entity"));
  CHECK_FALSE(is_entity("@placeholder"));
  CHECK(question_text(question) == kQuestion);
  // Windows line ends read the same.
  std::string crlf;
  for (const char c : std::string(kQuestion))
    crlf += c == '\n' ? std::string("\r\n") : std::string(1, c);
  CHECK(parse_question(crlf, "crlf").document == question.document);
}

TEST_CASE("question files: damaged ones are refused, naming the file and the fault") {
  const std::string good = kQuestion;
  const auto replace = [&](const std::string& from, const std::string& to) {
    std::string text = good;
    text.replace(text.find(from), from.size(), to);
    return text;
  };
  CHECK_ERROR(parse_question("http://x\n\nsome words\n", "short"), "short", "3 lines");
  CHECK_ERROR(parse_question(replace("\n\nthe bridge", "\nnot blank\nthe bridge"), "f"),
              "line 4 should be blank");
  CHECK_ERROR(parse_question(replace("@placeholder", "atlanta"), "f"),
              "must hold @placeholder once");
  CHECK_ERROR(parse_question(replace("\n@entity0\n\n", "\n@entity9\n\n"), "f"),
              "the answer @entity9 does not occur in the document");
  CHECK_ERROR(parse_question(replace("\n@entity0\n\n", "\nAtlanta\n\n"), "f"),
              "one entity id such as @entity3");
  CHECK_ERROR(parse_question(replace("@entity1:CNN", "CNN"), "f"), "line 10", "an entity line");

  testing::ScratchFolder folder("ar_questions");
  fs::create_directories(folder.path);
  CHECK_ERROR(read_question_folder(folder.path.string()), "holds no .question files");
  write_file(folder / "b.question", good);
  write_file(folder / "a.question", replace("opened a bridge", "closed a road"));
  write_file(folder / "notes.txt", "not a question");
  const std::vector<Question> questions = read_question_folder(folder.path.string());
  REQUIRE(questions.size() == 2);
  CHECK(questions[0].document[9] == "closed");  // in the order of the names
  CHECK(read_question_folder(folder.path.string(), 1).size() == 1);
  CHECK_ERROR(read_question_file(folder / "missing.question"), "cannot open");
  CHECK_ERROR(read_question_folder(folder / "nowhere"), "is not a folder");
}

TEST_CASE("the local cloze task: documents of neighbouring segments, anonymised entities") {
  testing::ScratchFolder folder("ar_local_task");
  fs::create_directories(folder / "corpus");
  // Windows of 5 segments: 4 of document, then a query sharing a rare word with them.
  std::ofstream en(folder / "corpus/train.en");
  for (int window = 0; window < 60; ++window) {
    const std::string thing = "gadget" + std::string(1, static_cast<char>('a' + window % 26));
    en << "The " << thing << " could not be opened.\n"
       << "Select a printer first.\n"
       << "Connection to the server failed.\n"
       << "Saving the document failed.\n"
       << "Please close the " << thing << " before quitting.\n";
  }
  en << "An unfinished window.\n";
  en.close();
  const LocalTaskSummary summary =
      build_local_task({.corpus = folder / "corpus", .out = folder / "task", .stop_words = 5});
  CHECK(summary.training + summary.validation + summary.test == 60);
  CHECK(summary.validation >= 1);
  CHECK(summary.test >= 1);
  const std::vector<Question> questions = read_question_folder(folder / "task/questions/training");
  CHECK(static_cast<std::int64_t>(questions.size()) == summary.training);
  std::set<std::string> answers;
  for (const Question& q : questions) {
    // The answer is the rare word the query shares with the document, behind its id.
    CHECK(q.entities.at(q.answer).rfind("gadget", 0) == 0);
    CHECK(std::count(q.query.begin(), q.query.end(), kPlaceholder) == 1);
    for (const std::string& token : q.document) CHECK(token.rfind("gadget", 0) != 0);
    answers.insert(q.answer);
  }
  // Entities are numbered anew for each question, so the answer's id varies.
  CHECK(answers.size() > 1);
  CHECK_ERROR(build_local_task({.corpus = folder / "nowhere", .out = folder / "x"}),
              "lacks train.en");
}
