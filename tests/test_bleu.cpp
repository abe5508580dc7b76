// BLEU, chrF, the 13a tokenizer and the Unicode helpers against sacreBLEU: fixtures/bleu.json
// holds what sacreBLEU 2.6.0 computes on the text files of fixtures/bleu/ (see
// fixtures/generate_bleu.py), and every printed digit must agree.
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "fixture_helpers.h"
#include "text/bleu.h"
#include "text/chrf.h"
#include "text/paired_bootstrap.h"
#include "text/text_file.h"
#include "text/unicode_text.h"

using namespace normgrad;
using testing::json;

namespace {

const json& bleu_fixture() { return testing::fixture_file("bleu.json"); }

std::string text_path(const std::string& name) {
  return std::string(NORMGRAD_FIXTURES_DIR) + "/bleu/" + name;
}

// A file as sacreBLEU's command line reads it: lines split at "\n", trailing whitespace removed.
std::vector<std::string> read_stripped(const std::string& name) {
  return text::strip_line_ends(text::read_text_lines(text_path(name)));
}

std::unique_ptr<text::CorpusMetric> metric_of(const json& c) {
  if (c["metric"] == "bleu") {
    return std::make_unique<text::Bleu>(text::BleuOptions{
        c["lowercase"].get<bool>(), text::parse_bleu_tokenizer(c["tokenize"].get<std::string>())});
  }
  text::ChrfOptions options;
  options.lowercase = c["lowercase"].get<bool>();
  return std::make_unique<text::Chrf>(options);
}

std::u32string u32(const std::string& text) { return text::decode_utf8(text, "test"); }
std::string u8(std::u32string_view text) { return text::encode_utf8(text); }

std::string temporary_file(const std::string& name, const std::string& contents) {
  const auto path = std::filesystem::temp_directory_path() / ("normgrad_test_bleu_" + name);
  std::ofstream(path, std::ios::binary) << contents;
  return path.string();
}

}  // namespace

TEST_CASE("python_lower, python_rstrip and python_split agree with Python's str methods") {
  int checked = 0;
  for (const auto& c : bleu_fixture()["python_text"]) {
    const std::string line = c["line"];
    INFO("line: " << line);
    const std::u32string text = u32(line);
    CHECK(u8(text::python_lower(text)) == c["lower"].get<std::string>());
    CHECK(u8(text::python_rstrip(text)) == c["rstrip"].get<std::string>());
    std::vector<std::string> words;
    for (auto word : text::python_split(text)) words.push_back(u8(word));
    CHECK(words == c["split"].get<std::vector<std::string>>());
    ++checked;
  }
  CHECK(checked > 90);
}

// The lowercase table is stored as runs (text/unicode_tables.h); these code points sit at a run's
// ends, between the members of a run of every second code point, or move down, as Python's
// str.lower() gives them.
TEST_CASE("python_lower reads the lowercase runs as Python's str.lower") {
  const std::vector<std::pair<char32_t, std::u32string>> cases{
      {U'\u0100', U"\u0101"},        {U'\u0101', U"\u0101"},         {U'\u012E', U"\u012F"},
      {U'\u0130', U"i\u0307"},       {U'\u0178', U"\u00FF"},         {U'\u2126', U"\u03C9"},
      {U'\uFF21', U"\uFF41"},        {U'\U00010400', U"\U00010428"}, {U'\U0001E921', U"\U0001E943"},
      {U'\U0001E922', U"\U0001E922"}};
  for (const auto& c : cases) {
    INFO("U+" << std::hex << static_cast<unsigned>(c.first));
    CHECK(text::python_lower(std::u32string(1, c.first)) == c.second);
  }
}

TEST_CASE("tokenize_13a agrees with sacreBLEU's 13a tokenizer line for line") {
  int checked = 0;
  for (const auto& c : bleu_fixture()["tokenize_13a"]) {
    const std::string line = c["line"];
    INFO("line: " << line);
    CHECK(u8(text::tokenize_13a(u32(line))) == c["tokens"].get<std::string>());
    ++checked;
  }
  CHECK(checked > 90);
}

TEST_CASE("corpus BLEU and chrF equal sacreBLEU's to every printed digit") {
  int checked = 0;
  for (const auto& c : bleu_fixture()["corpus"]) {
    INFO("case " << c["name"].get<std::string>() << ", " << c["metric"].get<std::string>()
                 << ", lowercase " << c["lowercase"].get<bool>() << ", tokenize "
                 << c["tokenize"].get<std::string>());
    const auto hypotheses = read_stripped(c["hyp"]);
    std::vector<std::vector<std::string>> references;
    for (const auto& name : c["refs"]) references.push_back(read_stripped(name));
    const auto metric = metric_of(c);

    const auto segments = metric->segment_statistics(hypotheses, references);
    const auto expected_segments = c["segments"].get<std::vector<std::vector<std::int64_t>>>();
    REQUIRE(segments.size() == expected_segments.size());
    for (std::size_t i = 0; i < segments.size(); ++i) {
      INFO("segment " << i + 1);
      CHECK(segments[i] == expected_segments[i]);
    }
    const auto score = metric->score(text::sum_statistics(segments));
    CHECK(score.format() == c["text"].get<std::string>());
    CHECK(score.score == doctest::Approx(c["score"].get<double>()).epsilon(1e-12));
    CHECK(metric->signature(references.size()) == c["signature"].get<std::string>());
    ++checked;
  }
  CHECK(checked == 30);
}

TEST_CASE("the worked example of docs/bleu.md") {
  const std::vector<std::string> hypothesis{"the cat sat on the mat"};
  const std::vector<std::vector<std::string>> reference{{"the cat is on the mat"}};
  const text::Bleu bleu;
  const auto score = bleu.corpus_score(hypothesis, reference);
  CHECK(score.format() ==
        "BLEU = 37.99 83.3/60.0/25.0/16.7 (BP = 1.000 ratio = 1.000 hyp_len = 6 ref_len = 6)");
  // (5/6 * 3/5 * 1/4 * 1/6)^(1/4): the fourth precision is 0/3, smoothed to 1/(2 * 3).
  CHECK(score.score ==
        doctest::Approx(100 * std::pow(5.0 / 6 * 3.0 / 5 * 1.0 / 4 * 1.0 / 6, 0.25)));

  // Tokenisation decides what counts as a word: "mat." against "mat ." matches under 13a only.
  const std::vector<std::string> with_period{"The cat sat on the mat."};
  const std::vector<std::vector<std::string>> spaced{{"The cat is on the mat ."}};
  CHECK(text::Bleu().corpus_score(with_period, spaced).format() ==
        "BLEU = 48.89 85.7/66.7/40.0/25.0 (BP = 1.000 ratio = 1.000 hyp_len = 7 ref_len = 7)");
  CHECK(text::Bleu({.tokenizer = text::BleuTokenizer::none})
            .corpus_score(with_period, spaced)
            .format() ==
        "BLEU = 19.43 66.7/40.0/12.5/8.3 (BP = 0.846 ratio = 0.857 hyp_len = 6 ref_len = 7)");
  CHECK(text::Chrf().corpus_score(hypothesis, reference).format() == "chrF2 = 64.58");
}

TEST_CASE("BLEU of an empty or hopeless corpus is 0 with sacreBLEU's details") {
  const text::Bleu bleu;
  const std::vector<std::string> none;
  const std::vector<std::vector<std::string>> no_refs{{}};
  CHECK(bleu.corpus_score(none, no_refs).format() ==
        "BLEU = 0.00 0.0/0.0/0.0/0.0 (BP = 1.000 ratio = 0.000 hyp_len = 0 ref_len = 0)");
  const std::vector<std::string> empty{""};
  const std::vector<std::vector<std::string>> reference{{"a b c"}};
  CHECK(bleu.corpus_score(empty, reference).format() ==
        "BLEU = 0.00 0.0/0.0/0.0/0.0 (BP = 0.000 ratio = 0.000 hyp_len = 0 ref_len = 3)");
  CHECK(text::Chrf().corpus_score(empty, reference).score == 0.0);
}

TEST_CASE("paired bootstrap agrees with sacreBLEU's --paired-bs in distribution") {
  int checked = 0;
  for (const auto& c : bleu_fixture()["paired_bootstrap"]) {
    INFO(c["baseline"].get<std::string>() << " against " << c["system"].get<std::string>() << ", "
                                          << c["metric"].get<std::string>());
    const std::vector<std::vector<std::string>> references{read_stripped(c["ref"])};
    json options{{"metric", c["metric"]}, {"lowercase", false}, {"tokenize", "13a"}};
    const auto metric = metric_of(options);
    const auto baseline = metric->segment_statistics(read_stripped(c["baseline"]), references);
    const auto system = metric->segment_statistics(read_stripped(c["system"]), references);
    const auto result = text::paired_bootstrap(*metric, baseline, system);

    CHECK(result.baseline.score ==
          doctest::Approx(c["baseline_score"].get<double>()).epsilon(1e-12));
    CHECK(result.system.score == doctest::Approx(c["system_score"].get<double>()).epsilon(1e-12));
    // Different resamples: the means agree to a fraction of the interval, the intervals to 20%,
    // and the p-values to 0.05 and on which side of 0.05 they fall.
    CHECK(std::abs(result.baseline.mean - c["baseline_mean"].get<double>()) <
          0.3 * c["baseline_ci"].get<double>());
    CHECK(std::abs(result.system.mean - c["system_mean"].get<double>()) <
          0.3 * c["system_ci"].get<double>());
    CHECK(result.baseline.interval == doctest::Approx(c["baseline_ci"].get<double>()).epsilon(0.2));
    CHECK(result.system.interval == doctest::Approx(c["system_ci"].get<double>()).epsilon(0.2));
    const double p = c["p_value"].get<double>();
    CHECK(std::abs(result.p_value - p) < 0.05);
    CHECK((result.p_value < 0.05) == (p < 0.05));
    ++checked;
  }
  CHECK(checked == 4);
}

TEST_CASE(
    "paired bootstrap: the seed decides the resamples, and a system against itself is not "
    "significant") {
  const std::vector<std::vector<std::string>> references{read_stripped("random.ref")};
  const text::Bleu bleu;
  const auto a = bleu.segment_statistics(read_stripped("random_a.hyp"), references);
  const auto b = bleu.segment_statistics(read_stripped("random_b.hyp"), references);
  const auto first = text::paired_bootstrap(bleu, a, b, 200, 7);
  const auto again = text::paired_bootstrap(bleu, a, b, 200, 7);
  const auto other = text::paired_bootstrap(bleu, a, b, 200, 8);
  CHECK(first.system.mean == again.system.mean);
  CHECK(first.p_value == again.p_value);
  CHECK(first.system.mean != other.system.mean);
  const auto itself = text::paired_bootstrap(bleu, a, a, 200, 7);
  CHECK(itself.p_value == doctest::Approx(1.0 / 201));  // no resampled difference exceeds 0 - 0
  CHECK(itself.system.mean == itself.baseline.mean);
}

TEST_CASE("bad text input is an Error naming the file and line") {
  const auto invalid = temporary_file("invalid.txt", "fine\nbroken \xC3\x28 here\n");
  CHECK_ERROR(text::read_text_lines(invalid), "normgrad_test_bleu_invalid.txt line 2",
              "invalid UTF-8 at byte 7");
  CHECK_ERROR(text::read_text_lines(temporary_file("overlong.txt", "\xC0\xAF")), "overlong");
  CHECK_ERROR(text::read_text_lines(temporary_file("surrogate.txt", "\xED\xA0\x80")), "surrogate");
  CHECK_ERROR(text::read_text_lines(temporary_file("cut.txt", "ok \xE2\x82")), "cut off");
  CHECK_ERROR(text::read_text_lines("/nonexistent/normgrad/hyp.txt"),
              "/nonexistent/normgrad/hyp.txt");
  CHECK_ERROR(text::read_text_lines(std::filesystem::temp_directory_path().string()), "directory");

  const text::Bleu bleu;
  const std::vector<std::string> two{"a", "b"};
  const std::vector<std::vector<std::string>> one{{"a"}};
  CHECK_ERROR(bleu.corpus_score(two, one), "BLEU", "reference stream 1 has 1 lines",
              "2 hypotheses");
  CHECK_ERROR(text::Chrf().corpus_score(two, one), "chrF", "reference stream 1 has 1 lines");
  const std::vector<std::vector<std::string>> no_streams;
  CHECK_ERROR(bleu.corpus_score(two, no_streams), "no references");
  const std::vector<std::string> bad{"\xFF"};
  const std::vector<std::vector<std::string>> ok{{"a"}};
  CHECK_ERROR(bleu.corpus_score(bad, ok), "hypothesis line 1");
  CHECK_ERROR(text::parse_bleu_tokenizer("intl"), "unknown tokenizer 'intl'", "13a or none");
  CHECK_ERROR(text::Chrf({.char_order = 0}), "char_order");
}

TEST_CASE("read_text_lines keeps a last line without a newline and a carriage return in its line") {
  const auto path = temporary_file("lines.txt", "one\r\ntwo\n\nthree");
  const auto lines = text::read_text_lines(path);
  CHECK(lines == std::vector<std::string>{"one\r", "two", "", "three"});
  CHECK(text::strip_line_ends(lines) == std::vector<std::string>{"one", "two", "", "three"});
}
