// bleu: corpus BLEU and chrF of a system's output against references, the same numbers as
// sacreBLEU 2.x, and a paired bootstrap test between two systems.
//
//   bleu HYP REF [REF...]                      BLEU = 22.28 100.0/50.8/29.3/19.2 (BP = ...)
//   bleu HYP REF --metric chrf                 chrF2 = 51.23
//   bleu HYP REF --paired-bs BASELINE          both systems, 95% intervals and the p-value
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "base/error.h"
#include "text/bleu.h"
#include "text/chrf.h"
#include "text/paired_bootstrap.h"
#include "text/text_file.h"

namespace {

using normgrad::text::MetricStatistics;

struct Settings {
  std::string hypothesis_path;
  std::vector<std::string> reference_paths;
  std::vector<std::string> metrics{"bleu"};
  bool lowercase = false;
  std::string tokenizer = "13a";
  int width = 2;
  bool score_only = false;
  bool signature = false;
  std::string baseline_path;
  int bootstrap_samples = normgrad::text::default_bootstrap_samples;
  std::uint64_t seed = normgrad::text::default_bootstrap_seed;
};

std::unique_ptr<normgrad::text::CorpusMetric> make_metric(const std::string& name,
                                                          const Settings& settings) {
  if (name == "bleu") {
    return std::make_unique<normgrad::text::Bleu>(normgrad::text::BleuOptions{
        settings.lowercase, normgrad::text::parse_bleu_tokenizer(settings.tokenizer)});
  }
  normgrad::text::ChrfOptions options;
  options.lowercase = settings.lowercase;
  return std::make_unique<normgrad::text::Chrf>(options);
}

std::string fixed(double value, int width) {
  char text[64];
  std::snprintf(text, sizeof text, "%.*f", width, value);
  return text;
}

std::vector<std::string> read_lines(const std::string& path, std::size_t expected,
                                    const std::string& role) {
  auto lines = normgrad::text::strip_line_ends(normgrad::text::read_text_lines(path));
  if (expected != static_cast<std::size_t>(-1) && lines.size() != expected) {
    throw normgrad::Error(normgrad::detail::concat(role, " ", path, " has ", lines.size(),
                                                   " lines but the hypotheses have ", expected));
  }
  return lines;
}

// `text` padded with spaces to `width` characters (code points, so that "±" counts once).
std::string padded(const std::string& text, std::size_t width) {
  std::size_t characters = 0;
  for (char byte : text) characters += (static_cast<unsigned char>(byte) & 0xC0) != 0x80;
  return text + std::string(width > characters ? width - characters : 0, ' ');
}

// sacreBLEU's signature with the resampling's settings after nrefs, as its --paired-bs prints.
std::string bootstrap_signature(const std::string& signature, const Settings& settings) {
  const auto bar = signature.find('|');
  return signature.substr(0, bar) + "|bs:" + std::to_string(settings.bootstrap_samples) +
         "|seed:" + std::to_string(settings.seed) + signature.substr(bar);
}

void print_paired_bootstrap(const Settings& settings, const std::vector<std::string>& hypotheses,
                            const std::vector<std::vector<std::string>>& references) {
  const auto baseline = read_lines(settings.baseline_path, hypotheses.size(), "the baseline");
  std::vector<std::string> names;
  std::vector<std::string> signatures;
  std::vector<normgrad::text::PairedBootstrapResult> results;
  for (const auto& name : settings.metrics) {
    const auto metric = make_metric(name, settings);
    const auto baseline_stats = metric->segment_statistics(baseline, references);
    const auto system_stats = metric->segment_statistics(hypotheses, references);
    results.push_back(normgrad::text::paired_bootstrap(*metric, baseline_stats, system_stats,
                                                       settings.bootstrap_samples, settings.seed));
    names.push_back(metric->score({}).name);
    signatures.push_back(bootstrap_signature(metric->signature(references.size()), settings));
  }

  // One row per system, one column per metric: score (resampled mean ± half the 95% interval),
  // and under the system the p-value of its difference from the baseline.
  const std::string baseline_name = "baseline: " + settings.baseline_path;
  const std::size_t name_width = std::max(baseline_name.size(), settings.hypothesis_path.size());
  constexpr std::size_t column_width = 26;
  auto cell = [&](const normgrad::text::BootstrapEstimate& e) {
    return fixed(e.score, settings.width) + " (" + fixed(e.mean, settings.width) + " ± " +
           fixed(e.interval, settings.width) + ")";
  };
  std::string table = padded("system", name_width);
  for (const auto& name : names) table += "  " + padded(name + " (mean ± 95% CI)", column_width);
  table += "\n" + padded(baseline_name, name_width);
  for (const auto& r : results) table += "  " + padded(cell(r.baseline), column_width);
  table += "\n" + padded(settings.hypothesis_path, name_width);
  for (const auto& r : results) table += "  " + padded(cell(r.system), column_width);
  table += "\n" + padded("", name_width);
  for (const auto& r : results) {
    const std::string p = "(p = " + fixed(r.p_value, 4) + ")" + (r.p_value < 0.05 ? "*" : "");
    table += "  " + padded(p, column_width);
  }
  std::printf("%s\n\n", table.c_str());
  std::printf("* the difference from the baseline is significant (p < 0.05).\n");
  for (std::size_t m = 0; m < names.size(); ++m) {
    std::printf("%s signature: %s\n", names[m].c_str(), signatures[m].c_str());
  }
}

int run(const Settings& settings) {
  const auto hypotheses = read_lines(settings.hypothesis_path, static_cast<std::size_t>(-1), "");
  std::vector<std::vector<std::string>> references;
  for (const auto& path : settings.reference_paths) {
    references.push_back(read_lines(path, hypotheses.size(), "the reference"));
  }
  if (!settings.baseline_path.empty()) {
    print_paired_bootstrap(settings, hypotheses, references);
    return 0;
  }
  for (const auto& name : settings.metrics) {
    const auto metric = make_metric(name, settings);
    const auto score = metric->corpus_score(hypotheses, references);
    if (settings.score_only) {
      std::printf("%s\n", fixed(score.score, settings.width).c_str());
    } else {
      const std::string signature = settings.signature ? metric->signature(references.size()) : "";
      std::printf("%s\n", score.format(settings.width, signature).c_str());
    }
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "Corpus BLEU and chrF of a translation against one or more references, computed as "
      "sacreBLEU 2.x computes them (13a tokenisation, exponential smoothing, chrF2), and a paired "
      "bootstrap test against a baseline system."};
  Settings settings;
  app.add_option("hypotheses", settings.hypothesis_path, "The system's output, one segment a line")
      ->required()
      ->check(CLI::ExistingFile);
  app.add_option("references", settings.reference_paths,
                 "Reference translations, line i aligned with line i of the output")
      ->required()
      ->check(CLI::ExistingFile);
  app.add_option("-m,--metric", settings.metrics, "bleu, chrf or both")
      ->check(CLI::IsMember({"bleu", "chrf"}))
      ->capture_default_str();
  app.add_flag("--lowercase,--lc", settings.lowercase, "Score case-insensitively");
  app.add_option("--tokenize", settings.tokenizer, "BLEU's tokenizer")
      ->check(CLI::IsMember({"13a", "none"}))
      ->capture_default_str();
  app.add_option("-w,--width", settings.width, "Decimals of the score")
      ->check(CLI::Range(0, 10))
      ->capture_default_str();
  app.add_flag("-b,--score-only", settings.score_only, "Print the score alone");
  app.add_flag("-s,--signature", settings.signature,
               "Print sacreBLEU's signature with the score, as its text format does");
  app.add_option("--paired-bs", settings.baseline_path,
                 "A baseline system's output: paired bootstrap resampling of the two")
      ->check(CLI::ExistingFile);
  app.add_option("--paired-bs-n", settings.bootstrap_samples, "Bootstrap resamples")
      ->check(CLI::Range(1, 1000000))
      ->capture_default_str();
  app.add_option("--seed", settings.seed, "Seed of the resampling")->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  try {
    return run(settings);
  } catch (const std::exception& error) {
    std::fprintf(stderr, "bleu: %s\n", error.what());
    return 1;
  }
}
