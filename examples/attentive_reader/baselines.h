#pragma once
// What answering without reading achieves, to read the reader's errors against: a guess among
// the document's entities, and the entity the document names most often (the first of those
// tied). A reader whose error is not below the second has learned nothing a count would not.

#include <vector>

#include "question_file.h"

namespace attentive_reader {

struct BaselineErrors {
  double guess = 0;     // expected error of a uniform guess among the document's entities
  double frequent = 0;  // error of the document's most frequent entity
};

// An Error for no questions.
BaselineErrors baseline_errors(const std::vector<Question>& questions);

}  // namespace attentive_reader
