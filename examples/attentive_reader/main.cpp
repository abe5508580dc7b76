// attentive_reader: the RMSNorm paper's reading-comprehension experiment (its Table 6), the
// bidirectional attentive reader with the normaliser inside its LSTMs.
//
//   attentive_reader prepare --corpus out/corpus/debian-en-de --out out/ar-data
#include <normgrad/normgrad.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <string>

#include "common/number_checks.h"
#include "common/wait_policy.h"
#include "local_task.h"

namespace ng = normgrad;
using namespace attentive_reader;

namespace {

constexpr const char* kProgram = "attentive_reader";

int prepare(const LocalTaskSettings& settings) {
  std::fprintf(stderr, "attentive_reader: building a cloze task from '%s'\n",
               settings.corpus.c_str());
  const LocalTaskSummary summary = build_local_task(settings);
  std::printf("%lld training, %lld validation and %lld test questions (%lld windows skipped: "
              "no shared content word) in %s/questions\n",
              static_cast<long long>(summary.training), static_cast<long long>(summary.validation),
              static_cast<long long>(summary.test), static_cast<long long>(summary.skipped),
              settings.out.c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  examples::default_to_passive_waiting(argv);
  CLI::App app{
      "The bidirectional attentive reader with LayerNorm, RMSNorm, pRMSNorm, BatchNorm or no "
      "norm in its LSTMs: the RMSNorm paper's Table 6"};
  app.require_subcommand(1);

  LocalTaskSettings p;
  CLI::App* prepare_command = app.add_subcommand(
      "prepare", "a cloze task of the CNN corpus's shape from a parallel corpus's English side");
  prepare_command->add_option("--corpus", p.corpus, "a folder with train.en")->required();
  prepare_command->add_option("--out", p.out, "the task's folder")->required();
  prepare_command->add_option("--document-segments", p.document_segments, "segments a document")
      ->check(examples::kPositive)
      ->capture_default_str();
  prepare_command->add_option("--min-query-words", p.min_query_words, "the shortest query")
      ->check(examples::kPositive)
      ->capture_default_str();
  prepare_command->add_option("--stop-words", p.stop_words, "the most frequent words, not entities")
      ->check(examples::kNonNegative)
      ->capture_default_str();
  prepare_command->add_option("--seed", p.seed, "the entities' numbering")->capture_default_str();

  CLI11_PARSE(app, argc, argv);
  try {
    return prepare(p);
  } catch (const ng::Error& error) {
    const std::string message = error.what();
    const bool named = message.rfind(kProgram, 0) == 0;
    std::fprintf(stderr, "%s%s\n", named ? "" : "attentive_reader: ", message.c_str());
    return 1;
  }
}
