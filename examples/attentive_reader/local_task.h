#pragma once
// `attentive_reader prepare`: a cloze task of the CNN corpus's shape built from a parallel
// corpus this machine has (the English side of scripts/build_corpus's training segments), for
// users without the CNN data, written in its question-file format and folder layout:
//
//   OUT/questions/{training,validation,test}/NNNNNNN.question
//
// The corpus keeps each package's messages together, so neighbouring segments share a topic.
// Each question takes `document_segments` consecutive segments as its document (4, as the
// "top4" version of the CNN data keeps 4 sentences of each story) and the segment after them
// as its query. Content words (letters only, at least 3 characters, not among the corpus's
// most frequent words) are the entities: each distinct one of the document becomes an
// @entityN, numbered in a random order per question as the CNN data anonymises its entities,
// so that a word's identity tells nothing and only its contexts do. The query's rarest content
// word that the document also holds is replaced by @placeholder and is the answer; windows
// whose query shares none with the document are skipped. A hash of each window's position
// sends 1 in 20 to validation and 1 in 20 to test.
//
// What the task measures: reading a short document for the place that matches the query's
// context around the blank, as CNN's questions ask. What it cannot: CNN's summaries paraphrase
// their story, while here the query is only the next message of the same program.

#include <cstdint>
#include <string>

namespace attentive_reader {

struct LocalTaskSettings {
  std::string corpus;  // a folder with train.en
  std::string out;
  std::int64_t document_segments = 4;
  std::int64_t min_query_words = 4;
  std::int64_t stop_words = 150;  // the most frequent words, which are not entities
  std::uint64_t seed = 1;         // the entity numbering
};

struct LocalTaskSummary {
  std::int64_t training = 0, validation = 0, test = 0;  // questions written
  std::int64_t skipped = 0;  // windows whose query shares no content word with the document
};

LocalTaskSummary build_local_task(const LocalTaskSettings& settings);

}  // namespace attentive_reader
