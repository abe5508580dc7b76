#include "batches.h"

#include <algorithm>
#include <random>

namespace attentive_reader {

namespace ng = normgrad;

QuestionBatch QuestionBatch::to(ng::Device device) const {
  return {document.to(device), document_lengths.to(device),
          query.to(device),    query_lengths.to(device),
          answers.to(device),  candidates.defined() ? candidates.to(device) : ng::Tensor()};
}

std::vector<std::int64_t> random_permutation(std::int64_t count, std::uint64_t seed) {
  std::vector<std::int64_t> order(static_cast<std::size_t>(std::max<std::int64_t>(count, 0)));
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = static_cast<std::int64_t>(i);
  std::mt19937_64 random(seed);
  for (std::size_t i = order.size(); i > 1; --i)
    std::swap(order[i - 1], order[static_cast<std::size_t>(random() % i)]);
  return order;
}

QuestionBatch make_batch(const std::vector<Question>& questions,
                         const std::vector<std::int64_t>& indices,
                         const ReaderVocabulary& vocabulary,
                         const std::vector<std::int64_t>& permutation, bool candidates) {
  NG_CHECK(!indices.empty(), "attentive_reader", "a batch needs at least one question");
  NG_CHECK(
      permutation.empty() || static_cast<std::int64_t>(permutation.size()) == vocabulary.entities(),
      "attentive_reader", "the entity permutation has ", permutation.size(), " numbers for ",
      vocabulary.entities(), " entities");
  const std::int64_t base = vocabulary.entity_base(), entities = vocabulary.entities();
  const auto encode = [&](const std::string& token) {
    std::int64_t id = vocabulary.id(token);
    if (!permutation.empty() && id >= base && id < base + entities)
      id = base + permutation[static_cast<std::size_t>(id - base)];
    return id;
  };
  const auto batch = static_cast<std::int64_t>(indices.size());
  const auto tensors = [&](auto part) {
    std::size_t longest = 0;
    for (const std::int64_t i : indices)
      longest = std::max(longest, part(questions[static_cast<std::size_t>(i)]).size());
    std::vector<std::int64_t> ids(longest * indices.size(), kPadding), lengths;
    for (std::size_t b = 0; b < indices.size(); ++b) {
      const std::vector<std::string>& tokens =
          part(questions[static_cast<std::size_t>(indices[b])]);
      for (std::size_t t = 0; t < tokens.size(); ++t)
        ids[t * indices.size() + b] = encode(tokens[t]);
      lengths.push_back(static_cast<std::int64_t>(tokens.size()));
    }
    return std::pair{ng::from_vector(ids, {static_cast<std::int64_t>(longest), batch}),
                     ng::from_vector(lengths, {batch})};
  };
  const auto [document, document_lengths] =
      tensors([](const Question& q) -> const std::vector<std::string>& { return q.document; });
  const auto [query, query_lengths] =
      tensors([](const Question& q) -> const std::vector<std::string>& { return q.query; });
  std::vector<std::int64_t> answers;
  for (const std::int64_t i : indices)
    answers.push_back(encode(questions[static_cast<std::size_t>(i)].answer));
  ng::Tensor mask;
  if (candidates) {
    const std::int64_t words = vocabulary.size();
    std::vector<float> values(static_cast<std::size_t>(batch * words), 0.0f);
    for (std::size_t b = 0; b < indices.size(); ++b)
      for (const std::string& token : questions[static_cast<std::size_t>(indices[b])].document)
        if (is_entity(token)) {
          const std::int64_t id = encode(token);
          if (id != kUnknown)
            values[b * static_cast<std::size_t>(words) + static_cast<std::size_t>(id)] = 1.0f;
        }
    mask = ng::from_vector(values, {batch, words});
  }
  return {document, document_lengths, query, query_lengths, ng::from_vector(answers, {batch}),
          mask};
}

}  // namespace attentive_reader
