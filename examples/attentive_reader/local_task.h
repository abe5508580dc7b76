#pragma once
// `attentive_reader prepare`: a cloze task of the CNN corpus's shape built from a parallel
// corpus this machine has (the English side of scripts/build_corpus's training segments), for
// users without the CNN data, written in its question-file format and folder layout:
//
//   OUT/questions/{training,validation,test}/NNNNNNN.question
//
// The corpus keeps each package's messages together, so neighbouring segments share a topic.
// Each question takes `document_segments` consecutive segments as its document (4, as the
// "top4" version of the CNN data keeps 4 sentences of each story). Its query is one of those
// segments, drawn at random ("inside", the default), or the segment after them ("next").
// Rarer content words (letters only, at least 3 characters, not among the corpus's 1000 most
// frequent words, as CNN's entities are names among common words; 17% of the corpus's tokens)
// are the entities: each distinct one of the document becomes an @entityN, numbered in
// a random order per question as the CNN data anonymises its entities, so that a word's
// identity tells nothing and only its contexts do. The query's rarest content word that the
// document holds is replaced by @placeholder and is the answer; windows whose query shares none
// with the document are skipped. A hash of each window's position sends 1 in 20 to validation
// and 1 in 20 to test.
//
// What the task measures: finding the place in the document whose context matches the query's
// around the blank, and reading the entity there, as CNN's questions ask. What it cannot: CNN's
// summaries paraphrase their story, while an "inside" query repeats a sentence of the document
// (so the task is easier), and a "next" query is only the next message of the same program
// (so it is mostly guessing).

#include <cstdint>
#include <string>

namespace attentive_reader {

struct LocalTaskSettings {
  std::string corpus;  // a folder with train.en
  std::string out;
  std::int64_t document_segments = 4;
  std::int64_t min_query_words = 4;
  // The most frequent words (at most a tenth of all) stay words; only rarer ones are entities.
  std::int64_t common_words = 1000;
  // The query: "inside", one of the document's own segments (drawn at random), or "next", the
  // segment after the document.
  std::string query = "inside";
  std::uint64_t seed = 1;  // the entity numbering and the query's segment
};

struct LocalTaskSummary {
  std::int64_t training = 0, validation = 0, test = 0;  // questions written
  std::int64_t skipped = 0;  // windows whose query shares no content word with the document
};

LocalTaskSummary build_local_task(const LocalTaskSettings& settings);

}  // namespace attentive_reader
