#include "evaluation.h"

#include <normgrad/normgrad.h>

#include "data/bleu.h"

namespace nmt {

namespace ng = normgrad;

BleuEvaluation dataset_bleu(const SentenceTranslator& translate,
                            const ng::data::ParallelDataset& dataset,
                            const std::vector<std::string>& references,
                            const std::string& program) {
  std::vector<std::vector<std::int32_t>> sources;
  std::vector<std::string> kept_references;
  for (std::size_t i = 0; i < dataset.size(); ++i) {
    const auto source = dataset.source(i);
    sources.emplace_back(source.begin(), source.end());
    NG_CHECK(dataset.line(i) <= references.size(), program, "the references have ",
             references.size(), " lines, but the dataset has a pair from line ", dataset.line(i));
    kept_references.push_back(references[dataset.line(i) - 1]);
  }
  BleuEvaluation result;
  result.translations = translate(sources);
  const std::vector<std::vector<std::string>> reference_streams{kept_references};
  const auto score = ng::data::Bleu().corpus_score(result.translations, reference_streams);
  result.bleu = score.score;
  result.text = score.format();
  return result;
}

}  // namespace nmt
