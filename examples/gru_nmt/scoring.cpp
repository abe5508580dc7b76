#include "scoring.h"

#include "translation.h"

namespace gru_nmt {

namespace ng = normgrad;

std::vector<PairScore> score_pairs(RnnSearch& model, const ng::text::SubwordTokenizer& tokenizer,
                                   const std::vector<std::string>& sources,
                                   const std::vector<std::string>& targets,
                                   std::int64_t batch_sentences, ng::Device device) {
  model.eval();
  const nmt::TeacherForcedLogProbs log_probs = [&](const SourceBatch& source,
                                                   const nmt::TargetBatch& target) {
    const ng::Tensor logits =
        model.forward(model.encode(source.ids, source.lengths, source.padding), target.input);
    return ng::log_softmax(logits.to(model.config().dtype), -1);  // float32 in mixed precision
  };
  return nmt::score_pairs(log_probs, tokenizer, sources, targets, batch_sentences, device,
                          "gru_nmt score");
}

}  // namespace gru_nmt
