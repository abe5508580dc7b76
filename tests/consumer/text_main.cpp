// A program outside normgrad that uses its text toolkit: one include, the target normgrad::text.
// run_consumer_test.sh expects the line to start "BLEU = 100.00": the hypothesis is its reference.
#include <normgrad/text.h>

#include <iostream>
#include <string>
#include <vector>

int main() {
  const std::vector<std::string> hypotheses = {"the cat sat on the mat ."};
  const std::vector<std::vector<std::string>> references = {hypotheses};
  const normgrad::text::MetricScore score =
      normgrad::text::Bleu().corpus_score(hypotheses, references);
  std::cout << score.format() << "\n";
  return 0;
}
