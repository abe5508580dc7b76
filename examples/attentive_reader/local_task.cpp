#include "local_task.h"

#include <normgrad/normgrad.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "common/word_tokens.h"
#include "question_file.h"
#include "text/text_file.h"

namespace attentive_reader {

namespace ng = normgrad;
namespace fs = std::filesystem;

namespace {

using Segment = std::vector<std::string>;

std::vector<Segment> read_segments(const std::string& path) {
  std::vector<Segment> segments;
  for (const std::string& line : ng::text::read_text_lines(path))
    segments.push_back(examples::word_tokens(line));
  return segments;
}

bool only_letters(const std::string& word) {
  // Bytes of multi-byte UTF-8 characters (umlauts and the like) count as letters.
  return std::all_of(word.begin(), word.end(), [](char c) {
    const auto byte = static_cast<unsigned char>(c);
    return byte >= 0x80 || (byte >= 'a' && byte <= 'z');
  });
}

class EntityWords {
 public:
  EntityWords(const std::vector<Segment>& training, std::int64_t common_words) {
    for (const Segment& segment : training)
      for (const std::string& word : segment) ++count_[word];
    std::vector<std::pair<std::int64_t, std::string>> by_count;
    for (const auto& [word, count] : count_) by_count.emplace_back(-count, word);
    std::sort(by_count.begin(), by_count.end());
    // At most a tenth of the words are common, so that a small corpus keeps entities.
    const auto common =
        std::min<std::size_t>(static_cast<std::size_t>(common_words), by_count.size() / 10);
    for (std::size_t i = 0; i < common; ++i) common_.insert(by_count[i].second);
  }
  bool is_entity(const std::string& word) const {
    return word.size() >= 3 && only_letters(word) && common_.count(word) == 0;
  }
  std::int64_t count(const std::string& word) const {
    const auto found = count_.find(word);
    return found == count_.end() ? 0 : found->second;
  }

 private:
  std::unordered_map<std::string, std::int64_t> count_;
  std::unordered_set<std::string> common_;
};

// The split a window of the corpus goes to: a hash of its position, so that the same corpus
// always gives the same split; 1 in 20 windows to validation and 1 in 20 to test.
const char* split_of(std::size_t window, std::uint64_t seed) {
  std::uint64_t hash = (window + 1) * 0x9E3779B97F4A7C15ull ^ seed;
  hash ^= hash >> 31;
  hash *= 0xBF58476D1CE4E5B9ull;
  hash ^= hash >> 27;
  const std::uint64_t bucket = hash % 20;
  return bucket == 0 ? "validation" : bucket == 1 ? "test" : "training";
}

// The segments a window takes: the document's, and the query's after them when it is the next.
std::size_t window_size(const LocalTaskSettings& settings) {
  return static_cast<std::size_t>(settings.document_segments) + (settings.query == "next" ? 1 : 0);
}

// The segment of a window that becomes the query: the one after the document, or one of the
// document's own, drawn among those long enough.
std::optional<std::size_t> query_segment(const std::vector<Segment>& segments, std::size_t first,
                                         const LocalTaskSettings& settings) {
  const std::size_t window = window_size(settings);
  const auto long_enough = [&](std::size_t s) {
    return static_cast<std::int64_t>(segments[s].size()) >= settings.min_query_words;
  };
  if (settings.query == "next")
    return long_enough(first + window - 1) ? std::optional(first + window - 1) : std::nullopt;
  std::vector<std::size_t> candidates;
  for (std::size_t s = first; s < first + window; ++s)
    if (long_enough(s)) candidates.push_back(s);
  if (candidates.empty()) return std::nullopt;
  std::mt19937_64 random(settings.seed * 7919 + first);
  return candidates[random() % candidates.size()];
}

// One question from a window: its document segments, and its query; nullopt when the query
// shares no content word with the document.
std::optional<Question> make_question(const std::vector<Segment>& segments, std::size_t first,
                                      std::size_t query_index, const EntityWords& words,
                                      const LocalTaskSettings& settings) {
  const Segment& query_words = segments[query_index];
  Segment document;
  for (std::size_t s = first; s < first + static_cast<std::size_t>(settings.document_segments); ++s)
    document.insert(document.end(), segments[s].begin(), segments[s].end());
  // The document's content words in order of first appearance.
  std::vector<std::string> entities;
  for (const std::string& word : document)
    if (words.is_entity(word) &&
        std::find(entities.begin(), entities.end(), word) == entities.end())
      entities.push_back(word);
  // The answer: the query's rarest content word that the document holds.
  std::string answer;
  for (const std::string& word : query_words)
    if (std::find(entities.begin(), entities.end(), word) != entities.end() &&
        (answer.empty() || words.count(word) < words.count(answer)))
      answer = word;
  if (answer.empty()) return std::nullopt;
  // A random numbering of the entities for this question.
  std::vector<std::size_t> order(entities.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::mt19937_64 random(settings.seed * 1000003 + first);
  for (std::size_t i = order.size(); i > 1; --i) std::swap(order[i - 1], order[random() % i]);
  std::map<std::string, std::string> id_of;
  Question question;
  for (std::size_t i = 0; i < entities.size(); ++i) {
    const std::string id = "@entity" + std::to_string(order[i]);
    id_of[entities[i]] = id;
    question.entities[id] = entities[i];
  }
  const auto anonymise = [&](const std::string& word) {
    const auto found = id_of.find(word);
    return found == id_of.end() ? word : found->second;
  };
  for (const std::string& word : document) question.document.push_back(anonymise(word));
  bool placed = false;
  for (const std::string& word : query_words) {
    if (!placed && word == answer) {
      question.query.push_back(kPlaceholder);
      placed = true;
    } else {
      question.query.push_back(anonymise(word));
    }
  }
  question.answer = id_of.at(answer);
  question.url = "train.en:" + std::to_string(first + 1);
  return question;
}

}  // namespace

LocalTaskSummary build_local_task(const LocalTaskSettings& settings) {
  NG_CHECK(settings.query == "inside" || settings.query == "next", "attentive_reader",
           "--query must be inside or next, got '", settings.query, "'");
  NG_CHECK(settings.document_segments >= 1 && settings.min_query_words >= 1 &&
               settings.common_words >= 0,
           "attentive_reader", "a document needs at least one segment and a query one word");
  const fs::path path = fs::path(settings.corpus) / "train.en";
  NG_CHECK(fs::exists(path), "attentive_reader", "'", settings.corpus,
           "' lacks train.en: give a folder of parallel text (scripts/build_corpus writes one)");
  const std::vector<Segment> segments = read_segments(path.string());
  const EntityWords words(segments, settings.common_words);
  // Written into questions.partial/ and renamed to questions/ when whole: tens of thousands of
  // small files, each plainly written (an fsync per file took minutes), and still no half set.
  const fs::path questions = fs::path(settings.out) / "questions";
  const fs::path partial = fs::path(settings.out) / "questions.partial";
  fs::remove_all(partial);
  for (const char* split : {"training", "validation", "test"})
    fs::create_directories(partial / split);
  LocalTaskSummary summary;
  std::map<std::string, std::int64_t> written;
  const std::size_t window = window_size(settings);
  for (std::size_t first = 0, index = 0; first + window <= segments.size();
       first += window, ++index) {
    const std::optional<std::size_t> query = query_segment(segments, first, settings);
    if (!query) continue;
    const std::optional<Question> question =
        make_question(segments, first, *query, words, settings);
    if (!question) {
      ++summary.skipped;
      continue;
    }
    const std::string split = split_of(index, settings.seed);
    char name[32];
    std::snprintf(name, sizeof name, "%07lld.question", static_cast<long long>(written[split]++));
    const fs::path file = partial / split / name;
    std::ofstream out(file, std::ios::binary);
    out << question_text(*question);
    NG_CHECK(out.good(), "attentive_reader", "cannot write '", file.string(), "'");
  }
  summary.training = written["training"];
  summary.validation = written["validation"];
  summary.test = written["test"];
  NG_CHECK(summary.training >= 1 && summary.validation >= 1 && summary.test >= 1,
           "attentive_reader", "'", path.string(), "' gave ", summary.training, " training, ",
           summary.validation, " validation and ", summary.test,
           " test questions: too little text for the task");
  fs::remove_all(questions);
  fs::rename(partial, questions);
  return summary;
}

}  // namespace attentive_reader
