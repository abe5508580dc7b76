#include "baselines.h"

#include <normgrad/normgrad.h>

#include <algorithm>

namespace attentive_reader {

BaselineErrors baseline_errors(const std::vector<Question>& questions) {
  NG_CHECK(!questions.empty(), "attentive_reader", "baseline errors need at least one question");
  double guessed = 0, counted = 0;
  for (const Question& question : questions) {
    const std::vector<std::string> entities = document_entities(question.document);
    NG_CHECK(!entities.empty(), "attentive_reader", "question '", question.url,
             "' has a document without entities");
    guessed += 1.0 / static_cast<double>(entities.size());
    // The most frequent entity, the first to appear among those tied.
    std::string frequent;
    std::ptrdiff_t most = 0;
    for (const std::string& entity : entities) {
      const std::ptrdiff_t count =
          std::count(question.document.begin(), question.document.end(), entity);
      if (count > most) {
        most = count;
        frequent = entity;
      }
    }
    if (frequent == question.answer) counted += 1;
  }
  const auto n = static_cast<double>(questions.size());
  return {.guess = 1 - guessed / n, .frequent = 1 - counted / n};
}

}  // namespace attentive_reader
