#include "timing.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <random>
#include <sstream>

#include "common/number_text.h"
#include "training.h"

namespace order_embedding {

namespace ng = normgrad;
using examples::format_number;

namespace {

// The paper's Table 8: seconds per 100 steps (Theano, a GPU of 2019).
const std::map<std::string, double>& paper_seconds() {
  static const std::map<std::string, double> seconds{
      {"none", 2.11}, {"layernorm", 12.02}, {"rmsnorm", 7.12}, {"prmsnorm:0.0625", 4.34}};
  return seconds;
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  return n % 2 == 1 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

// Captions of `vocabulary` - 2 distinct words w0, w1, ..., 7 to 14 of them each.
RetrievalSplit synthetic_split(const TimingSettings& s) {
  std::mt19937_64 random(s.seed);
  RetrievalSplit split;
  for (std::int64_t b = 0; b < s.batch; ++b) {
    const auto words = static_cast<std::int64_t>(7 + random() % 8);
    std::string caption;
    for (std::int64_t w = 0; w < words; ++w)
      caption += (w > 0 ? " w" : "w") +
                 std::to_string(random() % static_cast<std::uint64_t>(s.vocabulary - 2));
    split.captions.push_back(caption);
  }
  ng::Generator generator(s.seed);
  const ng::Tensor features = ng::rand({s.batch, s.image_dim}, generator);
  split.images = features / ng::sqrt(ng::sum(ng::square(features), {1}, true));
  return split;
}

}  // namespace

double NormTiming::seconds_per_100_steps() const { return 100 * median(step_seconds); }

double NormTiming::spread() const {
  const auto [fastest, slowest] = std::minmax_element(step_seconds.begin(), step_seconds.end());
  return (*slowest - *fastest) / median(step_seconds);
}

std::vector<NormTiming> time_norms(const TimingSettings& s, ng::Device device,
                                   std::FILE* progress) {
  NG_CHECK(!s.norms.empty() && s.steps >= 1 && s.rounds >= 1 && s.warmup >= 0 && s.batch >= 2 &&
               s.vocabulary >= 3,
           "order_embedding",
           "time needs norms, steps and rounds of at least 1, a batch of 2 and "
           "a vocabulary of 3");
  const RetrievalSplit split = synthetic_split(s);
  // The vocabulary of the captions, padded with unused words to the size asked for.
  std::vector<std::string> words = split.captions;
  for (std::int64_t w = 0; w < s.vocabulary - 2; ++w) words.push_back("w" + std::to_string(w));
  const Vocabulary vocabulary = Vocabulary::build(words);
  const CaptionBatch batch = vocabulary.batch(split.captions);
  const CaptionBatch on_device{batch.tokens.to(device), batch.lengths.to(device)};
  const ng::Tensor features = split.images.to(device);

  std::vector<NormTiming> timings;
  std::vector<std::unique_ptr<Trainer>> trainers;
  for (const std::string& norm : s.norms) {
    const ModelConfig model{.norm = norm,
                            .vocabulary = vocabulary.size(),
                            .word_dim = s.word_dim,
                            .dim = s.dim,
                            .image_dim = s.image_dim,
                            .seed = s.seed};
    const TrainSettings training{.steps = 1, .batch_size = s.batch, .seed = s.seed};
    trainers.push_back(
        std::make_unique<Trainer>(model, training, split, split, vocabulary, device));
    timings.push_back({.norm = norm, .step_seconds = {}});
  }
  for (std::int64_t round = 0; round < s.rounds; ++round) {
    for (std::size_t n = 0; n < trainers.size(); ++n) {
      for (std::int64_t w = 0; w < (round == 0 ? s.warmup : 0); ++w)
        trainers[n]->step(on_device, features);
      for (std::int64_t step = 0; step < s.steps; ++step) {
        const auto start = std::chrono::steady_clock::now();
        trainers[n]->step(on_device, features);  // its loss.item() waits for the device
        timings[n].step_seconds.push_back(
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
      }
      if (progress != nullptr) {
        std::fprintf(progress, "  round %lld/%lld  %-16s %.2f s per 100 steps so far\n",
                     static_cast<long long>(round + 1), static_cast<long long>(s.rounds),
                     timings[n].norm.c_str(), timings[n].seconds_per_100_steps());
        std::fflush(progress);
      }
    }
  }
  return timings;
}

std::string timing_markdown(const std::vector<NormTiming>& timings) {
  const NormTiming* layernorm = nullptr;
  for (const NormTiming& t : timings)
    if (ng::nn::NormSpec::parse(t.norm).kind == ng::nn::NormKind::LayerNorm) layernorm = &t;
  std::ostringstream out;
  out << "| norm | s per 100 steps | spread | saving over LayerNorm | paper (s) | paper's saving "
         "|\n|---|---|---|---|---|---|\n";
  const auto paper = paper_seconds();
  for (const NormTiming& t : timings) {
    const double seconds = t.seconds_per_100_steps();
    const std::string saving =
        layernorm != nullptr && &t != layernorm
            ? format_number("%.1f%%", 100 * (1 - seconds / layernorm->seconds_per_100_steps()))
            : "–";
    const auto found = paper.find(ng::nn::NormSpec::parse(t.norm).str());
    const std::string paper_seconds_text =
        found != paper.end() ? format_number("%.2f", found->second) : "–";
    const std::string paper_saving =
        found != paper.end() && found->first != "layernorm" && found->first != "none"
            ? format_number("%.1f%%", 100 * (1 - found->second / paper.at("layernorm")))
            : "–";
    out << "| " << t.norm << " | " << format_number("%.2f", seconds) << " | "
        << format_number("%.0f%%", 100 * t.spread()) << " | " << saving << " | "
        << paper_seconds_text << " | " << paper_saving << " |\n";
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

}  // namespace order_embedding
