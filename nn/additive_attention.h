#pragma once
// AdditiveAttention: the MLP attention of Bahdanau et al. (2015) as Nematus has it
// (paper, Appendix A.1), for a decoder that attends over the encoder's states C at every step:
//
//   e_ij = v . tanh( N1(U_c C_j + b) + N2(W_s s_i) )       scores, one per source position j
//   a_ij = softmax_j(e_ij) over the unpadded positions       weights, 0 at padding
//   c_i  = sum_j a_ij C_j                                     the context vector
//
// N1 and N2 are two normalisers made from one NormSpec, each over the attention size: the
// paper's models normalise the two terms separately ("none" drops both). With "weightnorm",
// U_c and W_s are reparameterised by nn::WeightNorm instead and N1, N2 are identities.
//
// U_c C + b does not depend on the decoder's state, so it is computed once per batch of
// source sentences (project_context) and reused at every decoder step (attend):
//
//   nn::AdditiveAttention attention(2048, 1024, 2048, {.norm = "rmsnorm"});
//   auto source = attention.project_context(C, source_padding);   // once per batch
//   for (...) {                                                    // every step
//     nn::AttentionOutput read = attention.attend(source, state);  // [B, 2048], [B, S]
//     ...
//   }
//
// Shapes are batch-first: C [batch, source_len, context_size], a decoder state
// [batch, query_size] (or [batch, steps, query_size] for several queries at once), and the
// padding mask [batch, source_len], int64, nonzero at padded positions (see attention.h). A
// sentence that is all padding gets zero weights and a zero context vector. The context and
// the queries have the parameters' dtype, or are both bfloat16 for float32 parameters (mixed
// precision, autograd/mixed_precision.h).
//
// Initialisation as Nematus's norm_weight: N(0, 0.01^2), or a random orthogonal matrix when
// the weight is square; the bias b starts at zero. The draws come from the default generator,
// as Linear's do.

#include <cstdint>
#include <memory>

#include "nn/attention.h"
#include "nn/module.h"
#include "nn/norms/factory.h"
#include "nn/norms/weight_norm.h"

namespace normgrad::nn {

struct AdditiveAttentionOptions {
  NormSpec norm{};  // N1 and N2 ("none" by default)
  DType dtype = DType::Float32;
};

class AdditiveAttention : public Module {
 public:
  // The source side of one batch, prepared by project_context and read by attend.
  struct ProjectedContext {
    Tensor context;       // C [batch, source_len, context_size]
    Tensor projected;     // N1(U_c C + b) [batch, source_len, attention_size]
    Tensor padding_mask;  // [batch, source_len], or undefined: no padding
  };

  AdditiveAttention(std::int64_t context_size, std::int64_t query_size, std::int64_t attention_size,
                    AdditiveAttentionOptions options = {});
  std::string type_name() const override { return "AdditiveAttention"; }

  ProjectedContext project_context(const Tensor& context, const Tensor& padding_mask = Tensor());
  // query [batch, query_size] -> output [batch, context_size], weights [batch, source_len];
  // query [batch, steps, query_size] -> [batch, steps, context_size], [batch, steps, source_len].
  AttentionOutput attend(const ProjectedContext& source, const Tensor& query);
  // Both at once, for a single use of the context.
  AttentionOutput forward(const Tensor& context, const Tensor& query,
                          const Tensor& padding_mask = Tensor());

  // U_c [attention_size, context_size] and W_s [attention_size, query_size]; undefined when
  // WeightNorm reparameterises them, and then held as direction and gain by
  // context_weight_norm and query_weight_norm (null otherwise).
  Tensor context_weight, query_weight;
  std::shared_ptr<WeightNorm> context_weight_norm, query_weight_norm;
  Tensor context_bias;                 // b [attention_size]
  Tensor score_weight;                 // v [attention_size]
  std::shared_ptr<Norm> context_norm;  // N1
  std::shared_ptr<Norm> query_norm;    // N2

  std::int64_t context_size() const { return context_size_; }
  std::int64_t query_size() const { return query_size_; }
  std::int64_t attention_size() const { return attention_size_; }

 private:
  // U_c and W_s as used: the parameters, or what WeightNorm makes of them.
  Tensor effective_context_weight() const;
  Tensor effective_query_weight() const;

  std::int64_t context_size_, query_size_, attention_size_;
};

}  // namespace normgrad::nn
