#pragma once
// The bidirectional attentive reader (Hermann et al. 2015) as the RMSNorm paper runs it (its
// Section 6.2 and Appendix A.2, on the code of Cooijmans et al. with the options
// --use_dq_sims 1 --use_desc_skip_c_g 1 --learn_h0 1 --use_bidir 1), the norm inside the
// LSTMs only:
//
//   words      one embedding E (d = 240) for documents and queries; dropout 0.5
//   readers    a bidirectional LSTM over the document, another over the query (four LSTMs,
//              each with a learned initial state h0); d_t = [h_fwd(t); h_bwd(t)] (2d), the
//              query u = [h_fwd(last); h_bwd(first)] (2d)
//   attention  s(t) = w . tanh(W_d d_t + b_d + W_u u + sim(t)), sim(t) = (M d_t) . (M u) (a
//              scalar per position, the "dq similarity"), alpha = softmax over the document's
//              real positions, r = sum_t alpha_t d_t
//   answer     g = tanh(W_r r + W_uo u + b + W_m mean_t d_t), dropout 0.5, logits W_o g + b_o
//              over the whole vocabulary; cross-entropy with the answer's id
//
// The LSTM cell is nn::LstmCell, the LayerNorm paper's: the input and state projections each
// normalised as one vector of 4d, and the cell state before its tanh. The reader's code adds
// the gate bias again after the two norms; here the norms' own biases play that part (the RMS
// family gets bias=on unless its spec says otherwise). batchnorm is recurrent batch
// normalisation (nn/recurrent.h). Initialisation as the code's utils.py: square matrices 0.05
// times an orthogonal one, the others uniform on +-sqrt(6 / (in + out + 1)), the attention
// vector w uniform on +-sqrt(1 / d), biases and initial states 0, norm gains 1 (0.1 for
// BatchNorm).

#include <normgrad/normgrad.h>

#include <cstdint>
#include <memory>
#include <string>

#include "batches.h"

namespace attentive_reader {

struct ModelConfig {
  std::string norm = "rmsnorm";  // none, layernorm, rmsnorm, prmsnorm[:p], batchnorm
  std::int64_t vocabulary = 0;   // ReaderVocabulary::size()
  std::int64_t dim = 240;
  double dropout = 0.5;
  // Where the answer is chosen: "vocabulary" (every word, as the paper's run of the reader's
  // code) or "document" (the document's entities only, the candidates CNN's questions have).
  std::string answers = "vocabulary";
  std::uint64_t seed = 1;  // the initial weights and the dropout draws
};

// The spec as this model uses it; an Error for l2norm and weightnorm, which the paper does not
// run here, and for a bad spec.
normgrad::nn::NormSpec parse_model_norm(const std::string& spec);

// One line naming everything a checkpoint must agree with.
std::string describe(const ModelConfig& config);

class AttentiveReader : public normgrad::nn::Module {
 public:
  explicit AttentiveReader(const ModelConfig& config);
  std::string type_name() const override { return "AttentiveReader"; }
  const ModelConfig& config() const { return config_; }

  // Logits over the vocabulary [B, V] for a batch on the model's device (with answers
  // "document", -1e30 but for each document's entities: the batch needs its candidates);
  // dropout in training mode only.
  normgrad::Tensor forward(const QuestionBatch& batch);
  // The attention over the document [Td, B] of the last forward pass (for looking at).
  const normgrad::Tensor& attention() const { return attention_; }
  normgrad::Generator& noise_generator() { return generator_; }

 private:
  // Runs a bidirectional reader from its learned initial states.
  normgrad::nn::RecurrentOutput read(normgrad::nn::Lstm& reader, const normgrad::Tensor& h0,
                                     const normgrad::Tensor& tokens,
                                     const normgrad::Tensor& lengths);

  ModelConfig config_;
  normgrad::Generator generator_;
  std::shared_ptr<normgrad::nn::Embedding> embedding_;
  std::shared_ptr<normgrad::nn::Lstm> document_reader_, query_reader_;
  normgrad::Tensor document_h0_, query_h0_;  // [2, d]
  std::shared_ptr<normgrad::nn::Linear> attend_document_, attend_query_, similarity_, score_;
  std::shared_ptr<normgrad::nn::Linear> out_context_, out_query_, out_mean_, logits_;
  normgrad::Tensor attention_;
};

}  // namespace attentive_reader
