#include "model.h"

#include <cmath>
#include <sstream>

namespace attentive_reader {

namespace ng = normgrad;
namespace init = ng::nn::init;
using ng::Tensor;

namespace {

// utils.norm_weight of the reader's code for a weight [out, in]: 0.05 times an orthogonal
// matrix when square, else uniform on +-sqrt(6 / (in + out + 1)).
void reader_weight(Tensor weight, ng::Generator& generator) {
  const std::int64_t out = weight.size(0), in = weight.size(1);
  if (in == out) {
    init::orthogonal_(weight, 0.05, generator);
  } else {
    const double bound = std::sqrt(6.0 / static_cast<double>(in + out + 1));
    init::uniform_(weight, -bound, bound, generator);
  }
}

std::shared_ptr<ng::nn::Linear> linear(std::int64_t in, std::int64_t out, bool bias,
                                       ng::Generator& generator) {
  auto layer = std::make_shared<ng::nn::Linear>(in, out, ng::nn::LinearOptions{.bias = bias});
  reader_weight(layer->weight, generator);
  if (bias) init::constant_(layer->bias, 0.0);
  return layer;
}

}  // namespace

ng::nn::NormSpec parse_model_norm(const std::string& spec) {
  ng::nn::NormSpec parsed = ng::nn::NormSpec::parse(spec);
  NG_CHECK(parsed.kind != ng::nn::NormKind::L2Norm && parsed.kind != ng::nn::NormKind::WeightNorm,
           "attentive_reader", "--norm ", spec,
           ": the reader's LSTMs take none, layernorm, rmsnorm, prmsnorm[:p] or batchnorm");
  // The gates' bias after the norms (the reader's code adds it there).
  if (!parsed.bias) parsed.bias = true;
  return parsed;
}

std::string describe(const ModelConfig& config) {
  std::ostringstream out;
  out.precision(17);
  out << "norm=" << parse_model_norm(config.norm).str() << " vocabulary=" << config.vocabulary
      << " dim=" << config.dim << " dropout=" << config.dropout << " answers=" << config.answers
      << " seed=" << config.seed;
  return out.str();
}

AttentiveReader::AttentiveReader(const ModelConfig& config)
    : config_(config), generator_(config.seed * 7919 + 1) {
  NG_CHECK(config.vocabulary >= 3 && config.dim >= 1 && config.dropout >= 0 && config.dropout < 1,
           "attentive_reader",
           "the model needs a vocabulary of a word or more, a positive "
           "size and a dropout in [0, 1), got ",
           describe(config));
  ng::Generator generator(config.seed);
  const std::int64_t d = config.dim;
  embedding_ =
      register_module("embedding", std::make_shared<ng::nn::Embedding>(config.vocabulary, d));
  reader_weight(embedding_->weight, generator);
  const ng::nn::RecurrentOptions reader_options{.cell = {.norm = parse_model_norm(config.norm)},
                                                .bidirectional = true};
  document_reader_ = register_module(
      "document_reader", std::make_shared<ng::nn::Lstm>(d, d, reader_options, generator));
  query_reader_ = register_module("query_reader",
                                  std::make_shared<ng::nn::Lstm>(d, d, reader_options, generator));
  for (ng::nn::Lstm* reader : {document_reader_.get(), query_reader_.get()}) {
    for (std::int64_t direction = 0; direction < 2; ++direction) {
      ng::nn::RecurrentCell& cell = reader->cell(direction);
      Tensor input_weight = ng::empty({4 * d, d}), state_weight = ng::empty({4 * d, d});
      for (std::int64_t gate = 0; gate < 4; ++gate) {
        reader_weight(input_weight.narrow(0, gate * d, d), generator);
        reader_weight(state_weight.narrow(0, gate * d, d), generator);
      }
      cell.set_weights(input_weight, state_weight);
      init::constant_(cell.bias_ih, 0.0);
      init::constant_(cell.bias_hh, 0.0);
    }
  }
  document_h0_ = register_parameter("document_h0", ng::zeros({2, d}));
  query_h0_ = register_parameter("query_h0", ng::zeros({2, d}));
  attend_document_ = register_module("attend_document", linear(2 * d, d, true, generator));
  attend_query_ = register_module("attend_query", linear(2 * d, d, false, generator));
  similarity_ = register_module("similarity", linear(2 * d, 2 * d, false, generator));
  score_ = register_module("score", linear(d, 1, false, generator));
  const double bound = std::sqrt(1.0 / static_cast<double>(d));
  init::uniform_(score_->weight, -bound, bound, generator);
  out_context_ = register_module("out_context", linear(2 * d, d, false, generator));
  out_query_ = register_module("out_query", linear(2 * d, d, true, generator));
  out_mean_ = register_module("out_mean", linear(2 * d, d, false, generator));
  logits_ = register_module("logits", linear(d, config.vocabulary, true, generator));
}

ng::nn::RecurrentOutput AttentiveReader::read(ng::nn::Lstm& reader, const Tensor& h0,
                                              const Tensor& tokens, const Tensor& lengths) {
  const double p = is_training() ? config_.dropout : 0.0;
  const Tensor words =
      ng::nn::functional::dropout(embedding_->forward(tokens), p, is_training(), generator_);
  const std::int64_t batch = tokens.size(1);
  const Tensor initial = h0.unsqueeze(1).expand({2, batch, config_.dim});
  return reader.forward_lengths(words, lengths, initial);
}

Tensor AttentiveReader::forward(const QuestionBatch& batch) {
  const ng::nn::RecurrentOutput document =
      read(*document_reader_, document_h0_, batch.document, batch.document_lengths);
  const ng::nn::RecurrentOutput query =
      read(*query_reader_, query_h0_, batch.query, batch.query_lengths);
  const Tensor d = document.output;  // [Td, B, 2d], 0 at padded positions
  const Tensor u = ng::cat({query.hidden.select(0, 0), query.hidden.select(0, 1)}, 1);  // [B, 2d]
  const std::int64_t steps = d.size(0);
  const Tensor mask = ng::nn::sequence_mask(batch.document_lengths, steps, false, d.dtype());

  // The dq similarity: one scalar per position, added to every unit of the attention's tanh.
  const Tensor similarity =
      ng::sum(similarity_->forward(d) * similarity_->forward(u).unsqueeze(0), {2}, true);
  const Tensor hidden =
      ng::tanh(attend_document_->forward(d) + attend_query_->forward(u).unsqueeze(0) + similarity);
  const Tensor scores = score_->forward(hidden).squeeze(2);  // [Td, B]
  attention_ = ng::softmax(ng::masked_fill(scores, ng::eq(mask, 0.0), -1e30), 0);
  const Tensor context = ng::sum(attention_.unsqueeze(2) * d, {0});  // [B, 2d]
  const Tensor mean = ng::sum(d, {0}) / batch.document_lengths.to(d.dtype()).unsqueeze(1);
  Tensor g =
      ng::tanh(out_context_->forward(context) + out_query_->forward(u) + out_mean_->forward(mean));
  g = ng::nn::functional::dropout(g, config_.dropout, is_training(), generator_);
  const Tensor logits = logits_->forward(g);
  if (config_.answers == "vocabulary") return logits;
  NG_CHECK(batch.candidates.defined(), "attentive_reader",
           "a reader answering among the document's entities needs the batch's candidates");
  return ng::masked_fill(logits, ng::eq(batch.candidates, 0.0), -1e30);
}

}  // namespace attentive_reader
