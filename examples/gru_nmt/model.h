#pragma once
// RNNSearch (Bahdanau et al., 2015) exactly as Nematus v0.3 codes it, the model of the RMSNorm
// paper's Tables 2, 3 and 5, with a norm slot wherever Nematus has one:
//
//   encoder    x -> Embedding -> bidirectional GRU -> C = [forward; backward] (2H per position)
//   init       s_0 = tanh( N(W_init mean_j C_j + b) )                 mean over real positions
//   decoder    the conditional GRU, at each target step t (E y_0 = 0: the first step reads a
//              zero vector, as in Nematus, where the start token bos stands):
//                s'_t = GRU1(E y_{t-1}, s_{t-1})
//                c_t  = attention(C, s'_t)                 (additive; its two terms normalised
//                apart) s_t  = GRU2(c_t, s'_t)                    (bias on the state side only)
//   output     o_t = tanh( N(W_e E y_{t-1} + b_e) + N(W_s s_t + b_s) + N(W_c c_t + b_c) )
//              logits_t = W_o o_t + b_o                    (not normalised)
//
// Every GRU has four norms (input and state side, gates and candidate apart); with
// "weightnorm" the weights are reparameterised instead. Initialisation as Nematus: N(0, 0.01^2)
// and orthogonal square matrices (each gate block of a GRU separately), biases 0;
// init_center shifts every weight matrix's mean (the paper's Figure 4).

#include <normgrad/normgrad.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace gru_nmt {

struct ModelConfig {
  std::int64_t vocabulary_size = 8000;  // the joint subword vocabulary of source and target
  std::int64_t embedding_size = 512;
  std::int64_t hidden_size = 1024;
  std::string norm = "none";           // none, layernorm, l2norm, rmsnorm, prmsnorm:p, weightnorm
  bool tie_target_embeddings = false;  // the output layer's weight is the target embedding
  double init_center = 0.0;
  // Variational dropout (Gal and Ghahramani, 2016), off as in the paper: each mask drawn once
  // per sentence and reused at every position. dropout_embedding: the source and target
  // embeddings; dropout_hidden: the state every GRU reads through U, the attention context,
  // and the deep output's hidden layer.
  double dropout_embedding = 0.0;
  double dropout_hidden = 0.0;
  normgrad::DType dtype = normgrad::DType::Float32;  // Float64 for gradient checks
  // "bfloat16": mixed precision (common/precision.h); the embeddings are rounded to bfloat16
  // and every layer after them computes on bfloat16 activations, in float32. The dropout
  // masks are bfloat16 too, their 1 / (1 - p) rounded (exact for p = 0.5, 0.2; 0.16% low for
  // p = 0.1).
  std::string precision = "float32";
};

// A feed-forward layer as Nematus's: N(W x + b), or with WeightNorm's W. No activation.
class NormalizedLinear : public normgrad::nn::Module {
 public:
  NormalizedLinear(std::int64_t in, std::int64_t out, const normgrad::nn::NormSpec& norm,
                   const normgrad::Tensor& initial_weight);  // its dtype is the layer's
  std::string type_name() const override { return "NormalizedLinear"; }
  normgrad::Tensor forward(const normgrad::Tensor& x);

 private:
  normgrad::Tensor weight_, bias_;
  std::shared_ptr<normgrad::nn::WeightNorm> weight_norm_;
  std::shared_ptr<normgrad::nn::Norm> norm_;
};

// What the decoder needs of one batch of source sentences.
struct EncodedSource {
  normgrad::nn::AdditiveAttention::ProjectedContext attention;  // C, N1(U_c C + b), padding
  normgrad::Tensor initial_state;                               // s_0 [B, H]
};

// One batch's dropout masks (normgrad::nn::functional::dropout_mask: 0 or 1 / (1 - p)); a
// mask is undefined where its probability is 0.
struct DropoutMasks {
  normgrad::Tensor source_embedding;  // [B, 1, E]
  normgrad::Tensor encoder_state;     // [2, B, H]: each direction's
  normgrad::Tensor target_embedding;  // [B, 1, E]: what GRU1 and the deep output read
  normgrad::Tensor decoder_state1;    // [B, H]: the s_{t-1} that GRU1's U reads
  normgrad::Tensor decoder_state2;    // [B, H]: the s'_t that GRU2's U reads
  normgrad::Tensor context;           // [B, 2H]: c_t, for GRU2 and the deep output
  normgrad::Tensor output;            // [B, 1, E]: the deep output's tanh layer
};

// The real positions of a batch whose rows are sorted by length, longest first, in the order
// forward_packed gives their logits: the flat indices b * steps + t into [B, steps], t-major.
// An Error when the lengths are not sorted or exceed steps.
std::vector<std::int64_t> packed_positions(const std::vector<std::int64_t>& lengths,
                                           std::int64_t steps);

class RnnSearch : public normgrad::nn::Module {
 public:
  RnnSearch(const ModelConfig& config, normgrad::Generator& generator);
  std::string type_name() const override { return "RnnSearch"; }
  const ModelConfig& config() const { return config_; }

  // The masks of a training batch of `batch` sentences, drawn from `generator` (the config's
  // dropout probabilities; all undefined when both are 0).
  DropoutMasks draw_dropout_masks(std::int64_t batch, normgrad::Generator& generator) const;

  // source int64 [B, S] with its lengths [B] and padding mask [B, S] (1 at padding). `dropout`:
  // the batch's masks in training, or nullptr.
  EncodedSource encode(const normgrad::Tensor& source, const normgrad::Tensor& source_lengths,
                       const normgrad::Tensor& source_padding,
                       const DropoutMasks* dropout = nullptr);

  // Teacher forcing: the logits [B, T, V] of every target position, given target_input
  // [B, T] (bos, y_1 .. y_{T-1}), in the activations' dtype (bfloat16 in mixed precision;
  // cross_entropy scores them in float32). With `states_read`, also the decoder states s_{t-1} that
  // the first GRU read at each step, [B, T, H] (for the paper's Table 5).
  normgrad::Tensor forward(const EncodedSource& source, const normgrad::Tensor& target_input,
                           normgrad::Tensor* states_read = nullptr,
                           const DropoutMasks* dropout = nullptr);

  // Teacher forcing over the real target positions only, as training uses it: the rows must
  // be sorted by target length, longest first (sort_by_target_length), target_lengths [B] on
  // the host. Step t runs the decoder on the rows whose sentences are still going, a prefix of
  // the batch, so padding costs nothing in the recurrence, the deep output or the logits.
  // Returns the logits [N, V] of the N real positions in time-major order (t = 0 of every
  // row, then t = 1 of the rows longer than 1, ...) and those positions as int64 [N] indices
  // b * T + t into [B, T] (packed_positions), on the model's device: gathering the targets
  // with them lines them up with the logits.
  struct PackedLogits {
    normgrad::Tensor logits;
    normgrad::Tensor positions;
  };
  PackedLogits forward_packed(const EncodedSource& source, const normgrad::Tensor& target_input,
                              const std::vector<std::int64_t>& target_lengths,
                              const DropoutMasks* dropout = nullptr);
  // One decoder step for R rows: the previous tokens [R] and states s_{t-1} [R, H] against the
  // rows' encoded sources (already arranged to R rows) -> logits [R, V] in the parameters'
  // dtype (so that a search adds its scores in float32 in mixed precision too) and s_t.
  struct Step {
    normgrad::Tensor logits;
    normgrad::Tensor state;
  };
  Step step(const normgrad::nn::AdditiveAttention::ProjectedContext& source,
            const normgrad::Tensor& previous_tokens, const normgrad::Tensor& state);

  // The state-side pre-activation U h of the decoder's first GRU (before its norms), [..., 3H],
  // in the parameters' dtype, for the paper's Table 5.
  normgrad::Tensor decoder_state_projection(const normgrad::Tensor& state) const;

 private:
  // The decoder's loop over the target steps, teacher-forced on `embedded` [B, T, E]: s_t and
  // c_t of every step, and with keep_states_read the s_{t-1} that GRU1 read. With `lengths`
  // (sorted, longest first) step t runs only the rows still going, and its tensors have
  // that many rows.
  struct DecoderRun {
    std::vector<normgrad::Tensor> states, contexts, states_read;
  };
  DecoderRun run_decoder(const EncodedSource& source, const normgrad::Tensor& embedded,
                         const std::vector<std::int64_t>* lengths, const DropoutMasks& masks,
                         bool keep_states_read);
  normgrad::Tensor embed_target(const normgrad::Tensor& tokens);
  normgrad::Tensor output_logits(const normgrad::Tensor& embedded, const normgrad::Tensor& state,
                                 const normgrad::Tensor& context,
                                 const normgrad::Tensor& output_dropout = normgrad::Tensor());

  ModelConfig config_;
  normgrad::DType activation_dtype_;
  std::shared_ptr<normgrad::nn::Embedding> source_embedding_, target_embedding_;
  std::shared_ptr<normgrad::nn::Gru> encoder_;
  std::shared_ptr<NormalizedLinear> init_state_;
  std::shared_ptr<normgrad::nn::GruCell> decoder_gru1_, decoder_gru2_;
  std::shared_ptr<normgrad::nn::AdditiveAttention> attention_;
  std::shared_ptr<NormalizedLinear> output_from_embedding_, output_from_state_,
      output_from_context_;
  std::shared_ptr<normgrad::nn::Linear> logits_;
};

}  // namespace gru_nmt
