// examples/attentive_reader: the CNN corpus's question files (read, written, refused when
// damaged) and the cloze task built from a parallel corpus.

#include <filesystem>
#include <fstream>
#include <set>

#include "attentive_reader/baselines.h"
#include "attentive_reader/batches.h"
#include "attentive_reader/local_task.h"
#include "attentive_reader/model.h"
#include "attentive_reader/question_file.h"
#include "attentive_reader/run.h"
#include "helpers.h"
#include "scratch_folder.h"

using namespace normgrad;
using namespace attentive_reader;
using testing::all_close;
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
  const LocalTaskSummary summary = build_local_task(
      {.corpus = folder / "corpus", .out = folder / "task", .common_words = 5, .query = "next"});
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

  // An "inside" query is one of the document's own segments with the answer blanked.
  // The most frequent words ("failed" is third) stay words; the rarer ones become entities.
  build_local_task({.corpus = folder / "corpus", .out = folder / "inside", .common_words = 5});
  std::int64_t common_seen = 0;
  for (const Question& q : read_question_folder(folder / "inside/questions/training")) {
    common_seen += std::count(q.document.begin(), q.document.end(), "failed");
    for (const auto& [id, word] : q.entities) CHECK(word != "failed");
    std::vector<std::string> filled = q.query;
    std::replace(filled.begin(), filled.end(), std::string(kPlaceholder), q.answer);
    const auto found =
        std::search(q.document.begin(), q.document.end(), filled.begin(), filled.end());
    CHECK(found != q.document.end());
  }
  CHECK(common_seen > 0);
}

namespace {

// Two small questions over the same words.
std::vector<Question> two_questions() {
  Question a = parse_question(kQuestion, "a");
  Question b = a;
  b.document = {"@entity1", "met", "@entity0", "in", "@entity0", "."};
  b.query = {"@placeholder", "met", "@entity0"};
  b.answer = "@entity1";
  return {a, b};
}

}  // namespace

TEST_CASE("baseline_errors: a guess among the entities, and the most frequent one") {
  const auto question = [](std::vector<std::string> document, std::string answer) {
    Question q;
    q.document = std::move(document);
    q.answer = std::move(answer);
    return q;
  };
  // Guessed right with chance 1/2, 1/3 and 1/2; the most frequent entity is right in the first
  // (twice against once), wrong in the second, and right in the third by appearing first.
  const BaselineErrors errors =
      baseline_errors({question({"@entity0", "x", "@entity1", "@entity1"}, "@entity1"),
                       question({"@entity2", "@entity3", "@entity4", "@entity3"}, "@entity2"),
                       question({"@entity5", "y", "@entity6"}, "@entity5")});
  CHECK(errors.guess == doctest::Approx(1.0 - (1.0 / 2 + 1.0 / 3 + 1.0 / 2) / 3));
  CHECK(errors.frequent == doctest::Approx(1.0 / 3));
  CHECK_ERROR(baseline_errors({}), "at least one question");
  CHECK_ERROR(baseline_errors({question({"no", "entities"}, "@entity0")}), "without entities");
}

TEST_CASE("ReaderVocabulary: entities first by number, then words seen twice or more") {
  const std::vector<Question> questions = two_questions();
  const ReaderVocabulary vocabulary = ReaderVocabulary::build(questions);
  CHECK(vocabulary.entities() == 3);
  CHECK(vocabulary.id("@entity0") == 2);
  CHECK(vocabulary.id("@entity2") == 4);
  CHECK(vocabulary.id("@entity3") == kUnknown);  // past the entities seen
  CHECK(vocabulary.id("the") != kUnknown);       // in both questions' text
  CHECK(vocabulary.id("monday") == kUnknown);    // seen once
  CHECK(vocabulary.id("@placeholder") != kUnknown);
  testing::ScratchFolder folder("ar_vocabulary");
  fs::create_directories(folder.path);
  vocabulary.save(folder / "vocabulary.txt");
  const ReaderVocabulary loaded = ReaderVocabulary::load(folder / "vocabulary.txt");
  CHECK(loaded.size() == vocabulary.size());
  CHECK(loaded.id("the") == vocabulary.id("the"));
  write_file(folder / "bad.txt", "words 3\nthe\n");
  CHECK_ERROR(ReaderVocabulary::load(folder / "bad.txt"), "is not a reader vocabulary");
}

TEST_CASE("make_batch: time-first padded ids, lengths, answers, and renumbered entities") {
  const std::vector<Question> questions = two_questions();
  const ReaderVocabulary vocabulary = ReaderVocabulary::build(questions);
  const QuestionBatch batch = make_batch(questions, {1, 0}, vocabulary);
  CHECK(batch.document.shape() == Shape{18, 2});
  CHECK(batch.document_lengths.to_vector<std::int64_t>() == std::vector<std::int64_t>{6, 18});
  CHECK(batch.query_lengths.to_vector<std::int64_t>() == std::vector<std::int64_t>{3, 9});
  CHECK(batch.answers.to_vector<std::int64_t>() == std::vector<std::int64_t>{3, 2});
  const std::vector<std::int64_t> ids = batch.document.to_vector<std::int64_t>();
  CHECK(ids[0] == 3);                 // question 1's first token, @entity1
  CHECK(ids[6 * 2 + 0] == kPadding);  // past its 6 tokens
  // Renumbering 0 -> 2, 1 -> 0, 2 -> 1 moves every entity id, answers included.
  const QuestionBatch renumbered = make_batch(questions, {1, 0}, vocabulary, {2, 0, 1});
  CHECK(renumbered.answers.to_vector<std::int64_t>() == std::vector<std::int64_t>{2, 4});
  CHECK(renumbered.document.to_vector<std::int64_t>()[0] == 2);
  const std::vector<std::int64_t> permutation = random_permutation(50, 3);
  std::vector<std::int64_t> sorted = permutation;
  std::sort(sorted.begin(), sorted.end());
  for (std::int64_t i = 0; i < 50; ++i) CHECK(sorted[static_cast<std::size_t>(i)] == i);
  CHECK(permutation == random_permutation(50, 3));
  CHECK_ERROR(make_batch(questions, {0}, vocabulary, {0, 1}), "permutation has 2 numbers");
}

TEST_CASE("the reader: logits over the vocabulary, attention only on a document's words") {
  const std::vector<Question> questions = two_questions();
  const ReaderVocabulary vocabulary = ReaderVocabulary::build(questions);
  for (const std::string norm : {"none", "layernorm", "rmsnorm", "prmsnorm:0.25", "batchnorm"}) {
    CAPTURE(norm);
    AttentiveReader model({.norm = norm, .vocabulary = vocabulary.size(), .dim = 6, .seed = 2});
    model.eval();
    const QuestionBatch batch = make_batch(questions, {1, 0}, vocabulary);
    const Tensor logits = model.forward(batch);
    CHECK(logits.shape() == Shape{2, vocabulary.size()});
    const Tensor attention = model.attention();
    CHECK(attention.shape() == Shape{18, 2});
    CHECK(all_close(sum(attention, {0}), {1.0, 1.0}, 1e-5, 1e-5));
    // Question 1 has 6 words: no attention past them.
    CHECK(sum(attention.narrow(0, 6, 12).select(1, 0)).item() == 0.0);
    // Its logits do not depend on the padding that the longer question brings.
    const Tensor alone = model.forward(make_batch(questions, {1}, vocabulary));
    if (norm != "batchnorm")  // whose statistics are the batch's, by design
      CHECK(all_close(alone.select(0, 0), logits.select(0, 0), 1e-4, 1e-5));
  }
  CHECK_ERROR(parse_model_norm("l2norm"), "the reader's LSTMs take");
  CHECK(parse_model_norm("rmsnorm").bias == true);  // the gates' bias after the norms
}

TEST_CASE("the reader's Trainer: a resumed run ends as an uninterrupted one") {
  testing::ScratchFolder folder("ar_resume");
  for (const char* split : {"training", "validation"}) {
    fs::create_directories(folder / ("data/questions/" + std::string(split)));
    const std::vector<Question> questions = two_questions();
    for (int i = 0; i < 6; ++i)
      write_file(
          folder / ("data/questions/" + std::string(split) + "/" + std::to_string(i) + ".question"),
          question_text(questions[static_cast<std::size_t>(i % 2)]));
  }
  const RunConfig run{.model = {.norm = "layernorm", .dim = 4, .seed = 3},
                      .data = {.folder = folder / "data"},
                      .training = {.steps = 4, .batch_size = 2, .valid_every = 2, .seed = 5}};
  std::FILE* log = std::tmpfile();
  const std::vector<ValidationRecord> whole =
      train_in_folder(ModelFolder(folder / "whole"), run, Device::cpu(), false, log);
  REQUIRE(whole.size() == 2);
  RunConfig half_run = run;
  {
    const ModelFolder half(folder / "half");
    const RunData data = load_run_data(half, run.data);
    half_run.model.vocabulary = data.vocabulary.size();
    Trainer trainer(half_run.model, run.training, data.training, data.validation, data.vocabulary,
                    Device::cpu());
    for (int step = 0; step < 2; ++step) trainer.train_step();  // to the first validation
    trainer.validate();
    half.write_config(half_run);
    data.vocabulary.save(half.file("vocabulary.txt"));
    trainer.save_state(half.file("state.safetensors"));
  }
  const std::vector<ValidationRecord> resumed =
      train_in_folder(ModelFolder(folder / "half"), half_run, Device::cpu(), false, log);
  std::fclose(log);
  REQUIRE(resumed.size() == 2);
  CHECK(resumed[1].train_loss == whole[1].train_loss);
  CHECK(resumed[1].valid_loss == whole[1].valid_loss);
  const std::vector<ValidationRecord> back = parse_history_csv(history_csv(whole));
  CHECK(back[1].valid_error == whole[1].valid_error);
  CHECK_ERROR(parse_history_csv("step,loss\n"), "does not start with its header");
  CHECK(to_json(run_config_from_json(to_json(run))) == to_json(run));
}
