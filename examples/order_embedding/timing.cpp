#include "timing.h"

#include <cstdio>
#include <map>
#include <random>

#include "training.h"

namespace order_embedding {

namespace ng = normgrad;

namespace {

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

std::string TimingSettings::sizes() const {
  char text[96];
  std::snprintf(text, sizeof text, "batch %lld, words %lld, GRU %lld, images %lld",
                static_cast<long long>(batch), static_cast<long long>(word_dim),
                static_cast<long long>(dim), static_cast<long long>(image_dim));
  return text;
}

const std::map<std::string, double>& paper_table8() {
  static const std::map<std::string, double> seconds{
      {"none", 2.11}, {"layernorm", 12.02}, {"rmsnorm", 7.12}, {"prmsnorm:0.0625", 4.34}};
  return seconds;
}

std::vector<examples::NormTiming> time_norms(const TimingSettings& s, ng::Device device,
                                             std::FILE* progress) {
  NG_CHECK(s.batch >= 2 && s.vocabulary >= 3, "order_embedding",
           "time needs a batch of 2 and a vocabulary of 3");
  const RetrievalSplit split = synthetic_split(s);
  // The vocabulary of the captions, padded with unused words to the size asked for.
  std::vector<std::string> words = split.captions;
  // Appended piece by piece: GCC 12 at -O3 warns falsely (-Wrestrict) about "literal" + string.
  for (std::int64_t w = 0; w < s.vocabulary - 2; ++w)
    words.push_back(std::string("w") += std::to_string(w));
  const Vocabulary vocabulary = Vocabulary::build(words);
  const CaptionBatch batch = vocabulary.batch(split.captions);
  const CaptionBatch on_device{batch.tokens.to(device), batch.lengths.to(device)};
  const ng::Tensor features = split.images.to(device);

  TrainSettings training = kPaperTraining;
  training.batch_size = s.batch;
  training.seed = s.seed;
  std::vector<std::unique_ptr<Trainer>> trainers;
  for (const std::string& norm : s.norms) {
    const ModelConfig model{.norm = norm,
                            .vocabulary = vocabulary.size(),
                            .word_dim = s.word_dim,
                            .dim = s.dim,
                            .image_dim = s.image_dim,
                            .seed = s.seed};
    trainers.push_back(
        std::make_unique<Trainer>(model, training, split, split, vocabulary, device));
  }
  // Each step's loss.item() waits for the device.
  return examples::time_in_rounds(
      s.norms, s.rounds, [&](std::size_t n) { trainers[n]->step(on_device, features); }, progress);
}

}  // namespace order_embedding
