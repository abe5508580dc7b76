#include "common/norm_timing.h"

#include <normgrad/normgrad.h>

#include <algorithm>
#include <chrono>
#include <sstream>

#include "common/number_text.h"
#include "common/progress.h"
#include "common/text_file.h"

namespace examples {

namespace ng = normgrad;

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  return n % 2 == 1 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

bool is_layernorm(const std::string& norm) {
  return ng::nn::NormSpec::parse(norm).kind == ng::nn::NormKind::LayerNorm;
}

double relative_range(std::vector<double> values) {
  if (values.empty()) return 0.0;
  const double middle = median(values);
  const auto [low, high] = std::minmax_element(values.begin(), values.end());
  return middle > 0 ? (*high - *low) / middle : 0.0;
}

double NormTiming::seconds_per_100_steps() const { return 100 * median(step_seconds); }

double NormTiming::spread() const { return relative_range(step_seconds); }

std::vector<NormTiming> time_in_rounds(const std::vector<std::string>& norms, const Rounds& rounds,
                                       const std::function<void(std::size_t)>& step,
                                       std::FILE* progress) {
  NG_CHECK(!norms.empty() && rounds.steps >= 1 && rounds.rounds >= 1 && rounds.warmup >= 0,
           "time_in_rounds", "needs a norm, and steps and rounds of at least 1");
  std::vector<NormTiming> timings;
  for (const std::string& norm : norms) timings.push_back({.norm = norm, .step_seconds = {}});
  for (std::int64_t round = 0; round < rounds.rounds; ++round) {
    for (std::size_t n = 0; n < norms.size(); ++n) {
      for (std::int64_t w = 0; w < (round == 0 ? rounds.warmup : 0); ++w) step(n);
      for (std::int64_t s = 0; s < rounds.steps; ++s) {
        const auto start = std::chrono::steady_clock::now();
        step(n);
        timings[n].step_seconds.push_back(seconds_since(start));
      }
      if (progress != nullptr) {
        std::fprintf(progress, "  round %lld/%lld  %-16s %.2f s per 100 steps so far\n",
                     static_cast<long long>(round + 1), static_cast<long long>(rounds.rounds),
                     timings[n].norm.c_str(), timings[n].seconds_per_100_steps());
        std::fflush(progress);
      }
    }
  }
  return timings;
}

std::string timing_markdown(const std::vector<NormTiming>& timings,
                            const std::map<std::string, double>& paper_seconds) {
  const NormTiming* layernorm = nullptr;
  for (const NormTiming& t : timings)
    if (is_layernorm(t.norm)) layernorm = &t;
  const auto paper_layernorm = paper_seconds.find("layernorm");
  std::ostringstream out;
  out << "| norm | s per 100 steps | spread | saving over LayerNorm | paper (s) | paper's saving "
         "|\n|---|---|---|---|---|---|\n";
  for (const NormTiming& t : timings) {
    const double seconds = t.seconds_per_100_steps();
    const std::string saving =
        layernorm != nullptr && &t != layernorm
            ? format_number("%.1f%%", 100 * (1 - seconds / layernorm->seconds_per_100_steps()))
            : "–";
    const std::string spec = ng::nn::NormSpec::parse(t.norm).str();
    const auto paper = paper_seconds.find(spec);
    const bool has_paper = paper != paper_seconds.end();
    const std::string paper_saving =
        has_paper && paper_layernorm != paper_seconds.end() && !is_layernorm(spec) && spec != "none"
            ? format_number("%.1f%%", 100 * (1 - paper->second / paper_layernorm->second))
            : "–";
    out << "| " << t.norm << " | " << format_number("%.2f", seconds) << " | "
        << format_number("%.0f%%", 100 * t.spread()) << " | " << saving << " | "
        << (has_paper ? format_number("%.2f", paper->second) : "–") << " | " << paper_saving
        << " |\n";
  }
  return out.str();
}

std::string timing_csv(const std::vector<NormTiming>& timings) {
  std::ostringstream out;
  out.precision(9);
  out << "norm,seconds_per_100_steps,spread,timed_steps\n";
  for (const NormTiming& t : timings)
    out << t.norm << ',' << t.seconds_per_100_steps() << ',' << t.spread() << ','
        << t.step_seconds.size() << '\n';
  return out.str();
}

void write_timing_tables(const std::string& folder, const std::string& name,
                         const std::vector<NormTiming>& timings, const std::string& markdown,
                         const std::string& program) {
  write_text_file(folder + "/" + name + ".csv", timing_csv(timings), program);
  write_text_file(folder + "/" + name + ".md", markdown, program);
}

std::string rounds_text(const Rounds& rounds) {
  std::ostringstream out;
  out << rounds.rounds << " rounds of " << rounds.steps << " timed steps after " << rounds.warmup
      << " untimed, the norms taking turns. The spread is the range of the steps over their "
         "median.";
  return out.str();
}

}  // namespace examples
