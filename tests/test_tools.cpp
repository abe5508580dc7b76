// The command-line tools run as a user runs them: output, exit status and error messages.
#include <doctest/doctest.h>

#include <cstdio>
#include <string>

#include "fixture_helpers.h"
#include "run_program.h"

namespace {

using testing::run_program;

std::string fixture_text(const std::string& name) {
  return std::string(NORMGRAD_FIXTURES_DIR) + "/bleu/" + name;
}

}  // namespace

#ifdef NORMGRAD_BLEU_PROGRAM

TEST_CASE("bleu prints sacreBLEU's text form of BLEU and chrF") {
  const std::string bleu = NORMGRAD_BLEU_PROGRAM;
  const std::string files = fixture_text("tricky.hyp") + " " + fixture_text("tricky.ref");
  // The expected lines are those of fixtures/bleu.json, which sacreBLEU wrote.
  const auto plain = run_program(bleu + " " + files);
  CHECK(plain.status == 0);
  CHECK(
      plain.output ==
      "BLEU = 51.64 68.0/54.9/47.0/40.5 (BP = 1.000 ratio = 1.012 hyp_len = 175 ref_len = 173)\n");

  const auto both = run_program(bleu + " " + files + " " + fixture_text("tricky.ref2") +
                                " --metric bleu chrf --signature --lowercase");
  CHECK(both.status == 0);
  const auto& corpus = testing::fixture_file("bleu.json")["corpus"];
  std::string expected;
  for (const auto& c : corpus) {
    if (c["name"] == "tricky_two_refs" && c["lowercase"] == true && c["tokenize"] == "13a") {
      const std::string text = c["text"];
      const auto equals = text.find(" = ");
      expected += text.substr(0, equals) + "|" + c["signature"].get<std::string>() +
                  text.substr(equals) + "\n";
    }
  }
  CHECK(both.output == expected);

  const auto score_only = run_program(bleu + " " + files + " -b --tokenize none");
  CHECK(score_only.output == "23.86\n");
}

TEST_CASE("bleu --paired-bs prints both systems, their intervals and the p-value") {
  const auto result =
      run_program(std::string(NORMGRAD_BLEU_PROGRAM) + " " + fixture_text("random_b.hyp") + " " +
                  fixture_text("random.ref") + " --paired-bs " + fixture_text("random_a.hyp"));
  INFO(result.output);
  CHECK(result.status == 0);
  CHECK(result.output.find("40.83 (") != std::string::npos);  // the baseline's BLEU
  CHECK(result.output.find("22.62 (") != std::string::npos);  // the system's
  CHECK(result.output.find("(p = 0.0010)*") != std::string::npos);
  CHECK(result.output.find("nrefs:1|bs:1000|seed:12345|case:mixed|eff:no|tok:13a") !=
        std::string::npos);
}

TEST_CASE("bleu refuses bad flags and files with a message and a non-zero exit") {
  const std::string bleu = NORMGRAD_BLEU_PROGRAM;
  const std::string hyp = fixture_text("tricky.hyp");
  const std::string ref = fixture_text("tricky.ref");

  const auto mismatch = run_program(bleu + " " + fixture_text("random_a.hyp") + " " + ref);
  CHECK(mismatch.status != 0);
  CHECK(mismatch.output.find("tricky.ref has 24 lines but the hypotheses have 300") !=
        std::string::npos);

  const auto missing = run_program(bleu + " /nonexistent/hyp.txt " + ref);
  CHECK(missing.status != 0);
  CHECK(missing.output.find("/nonexistent/hyp.txt") != std::string::npos);

  const auto tokenizer = run_program(bleu + " " + hyp + " " + ref + " --tokenize intl");
  CHECK(tokenizer.status != 0);
  CHECK(tokenizer.output.find("intl") != std::string::npos);

  const auto metric = run_program(bleu + " " + hyp + " " + ref + " --metric ter");
  CHECK(metric.status != 0);
  CHECK(metric.output.find("ter") != std::string::npos);

  const auto no_reference = run_program(bleu + " " + hyp);
  CHECK(no_reference.status != 0);
  CHECK(no_reference.output.find("references") != std::string::npos);
}

#else

TEST_CASE("bleu program tests skipped: the tools are not built (NORMGRAD_BUILD_TOOLS=OFF)") {
  MESSAGE("the bleu program was not built; its tests are skipped");
}

#endif
