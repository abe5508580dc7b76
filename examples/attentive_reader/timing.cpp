#include "timing.h"

#include <cstdio>
#include <random>

#include "training.h"

namespace attentive_reader {

namespace ng = normgrad;

const std::map<std::string, double>& paper_table6() {
  static const std::map<std::string, double> seconds{{"none", 315},
                                                     {"batchnorm", 345},
                                                     {"layernorm", 392},
                                                     {"rmsnorm", 333},
                                                     {"prmsnorm:0.0625", 330}};
  return seconds;
}

std::string TimingSettings::sizes() const {
  char text[96];
  std::snprintf(text, sizeof text, "batch %lld, %lld units, %lld words",
                static_cast<long long>(batch), static_cast<long long>(dim),
                static_cast<long long>(vocabulary));
  return text;
}

std::vector<examples::NormTiming> time_norms(const TimingSettings& s, ng::Device device,
                                             std::FILE* progress) {
  NG_CHECK(s.batch >= 1 && s.dim >= 1 && s.entities >= 1 && s.vocabulary > s.entities + 10 &&
               s.min_document >= 1 && s.max_document >= s.min_document && s.min_query >= 1 &&
               s.max_query >= s.min_query,
           "attentive_reader",
           "time needs positive sizes, a vocabulary larger than its "
           "entities, and length ranges with min <= max");
  // Questions of random words and entities, over a vocabulary of exactly the size asked for.
  std::mt19937_64 random(s.seed);
  const std::int64_t words = s.vocabulary - 2 - s.entities - 1;  // @placeholder is a word too
  // The tokens are appended piece by piece: GCC 12 at -O3 warns falsely (-Wrestrict) about
  // "literal" + string.
  const auto token = [&](bool entity_allowed) {
    const bool entity = entity_allowed && random() % 7 == 0;
    std::string text = entity ? "@entity" : "w";
    text += std::to_string(random() % static_cast<std::uint64_t>(entity ? s.entities : words));
    return text;
  };
  const auto length = [&](std::int64_t low, std::int64_t high) {
    return low + static_cast<std::int64_t>(random() % static_cast<std::uint64_t>(high - low + 1));
  };
  std::vector<Question> questions;
  for (std::int64_t b = 0; b < s.batch; ++b) {
    Question q;
    q.document.push_back("@entity" + std::to_string(b % s.entities));
    for (std::int64_t t = 1; t < length(s.min_document, s.max_document); ++t)
      q.document.push_back(token(true));
    q.query.push_back(kPlaceholder);
    for (std::int64_t t = 1; t < length(s.min_query, s.max_query); ++t)
      q.query.push_back(token(true));
    q.answer = q.document.front();
    questions.push_back(std::move(q));
  }
  std::vector<std::string> vocabulary_words{kPlaceholder};
  for (std::int64_t w = 0; w < words; ++w)
    vocabulary_words.push_back(std::string("w") += std::to_string(w));
  const ReaderVocabulary vocabulary = ReaderVocabulary::of(s.entities, vocabulary_words);
  std::vector<std::int64_t> all(static_cast<std::size_t>(s.batch));
  for (std::size_t i = 0; i < all.size(); ++i) all[i] = static_cast<std::int64_t>(i);
  const QuestionBatch batch = make_batch(questions, all, vocabulary).to(device);

  TrainSettings training = kPaperTraining;
  training.batch_size = s.batch;
  training.seed = s.seed;
  std::vector<std::unique_ptr<Trainer>> trainers;
  for (const std::string& norm : s.norms)
    trainers.push_back(std::make_unique<Trainer>(
        ModelConfig{.norm = norm, .vocabulary = vocabulary.size(), .dim = s.dim, .seed = s.seed},
        training, questions, questions, vocabulary, device));
  return examples::time_in_rounds(
      s.norms, s.rounds, [&](std::size_t n) { trainers[n]->step(batch); }, progress);
}

}  // namespace attentive_reader
