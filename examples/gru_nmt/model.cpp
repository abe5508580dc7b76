#include "model.h"

#include <cmath>

#include "common/precision.h"
#include "text/subword_tokenizer.h"

namespace gru_nmt {

namespace ng = normgrad;

namespace {

// Nematus's norm_weight: orthogonal when square, else N(0, 0.01^2); shifted by `center`.
ng::Tensor nematus_weight(std::int64_t rows, std::int64_t columns, double center,
                          ng::Generator& generator, ng::DType dtype) {
  ng::Tensor w = ng::empty({rows, columns}, {.dtype = dtype});
  if (rows == columns) {
    ng::nn::init::orthogonal_(w, 1.0, generator);
  } else {
    ng::nn::init::normal_(w, 0.0, 0.01, generator);
  }
  return center == 0.0 ? w : ng::add(w, center);
}

// A GRU weight [3H, in] made of its three gate blocks (reset, update, candidate), each
// initialised on its own as Nematus does.
ng::Tensor gru_weight(std::int64_t hidden, std::int64_t in, double center, ng::Generator& generator,
                      ng::DType dtype) {
  return ng::cat({nematus_weight(hidden, in, center, generator, dtype),
                  nematus_weight(hidden, in, center, generator, dtype),
                  nematus_weight(hidden, in, center, generator, dtype)},
                 0);
}

void initialise_gru(ng::nn::GruCell& cell, double center, ng::Generator& generator,
                    ng::DType dtype) {
  const std::int64_t hidden = cell.hidden_size();
  cell.set_weights(gru_weight(hidden, cell.input_size(), center, generator, dtype),
                   gru_weight(hidden, hidden, center, generator, dtype));
  ng::NoGradGuard no_grad;
  if (cell.bias_ih.defined()) cell.bias_ih.zero_();
  if (cell.bias_hh.defined()) cell.bias_hh.zero_();
}

// The attention's weights as Nematus's: U_c [A, C] and W_s [A, Q] by norm_weight, v as a
// norm_weight column, b = 0. The layer drew its own from the default generator; these come
// from the model's, so that a seed decides the whole model.
void initialise_attention(ng::nn::AdditiveAttention& attention, double center,
                          ng::Generator& generator, ng::DType dtype) {
  const std::int64_t A = attention.attention_size();
  const ng::Tensor context = nematus_weight(A, attention.context_size(), center, generator, dtype);
  const ng::Tensor query = nematus_weight(A, attention.query_size(), center, generator, dtype);
  ng::NoGradGuard no_grad;
  if (attention.context_weight_norm) {
    attention.context_weight_norm->reset(context);
    attention.query_weight_norm->reset(query);
  } else {
    attention.context_weight.copy_(context);
    attention.query_weight.copy_(query);
  }
  attention.score_weight.copy_(nematus_weight(A, 1, center, generator, dtype).reshape({A}));
  attention.context_bias.zero_();
}

}  // namespace

NormalizedLinear::NormalizedLinear(std::int64_t in, std::int64_t out, const ng::nn::NormSpec& norm,
                                   const ng::Tensor& initial_weight) {
  NG_CHECK(initial_weight.shape() == ng::Shape({out, in}), "NormalizedLinear",
           "initial weight must be [", out, ", ", in, "], got ", initial_weight.shape());
  if (norm.reparameterises_weight()) {
    weight_norm_ = register_module("weight", std::make_shared<ng::nn::WeightNorm>(initial_weight));
  } else {
    weight_ = register_parameter("weight", initial_weight.clone());
  }
  bias_ = register_parameter("bias", ng::zeros({out}, {.dtype = initial_weight.dtype()}));
  norm_ = register_module(
      "norm", ng::nn::make_norm(norm, out, ng::nn::NormLayout::Features, initial_weight.dtype()));
}

ng::Tensor NormalizedLinear::forward(const ng::Tensor& x) {
  const ng::Tensor w = weight_norm_ ? weight_norm_->weight() : weight_;
  return norm_->forward(ng::nn::functional::linear(x, ng::in_input_dtype(w, x),
                                                   ng::in_input_dtype(bias_, x)));
}

RnnSearch::RnnSearch(const ModelConfig& config, ng::Generator& generator)
    : config_(config),
      activation_dtype_(examples::activation_dtype(config.precision, config.dtype, "gru_nmt")) {
  NG_CHECK(config.vocabulary_size > 4 && config.embedding_size > 0 && config.hidden_size > 0,
           "RnnSearch", "vocabulary_size must be > 4 and the sizes positive, got vocabulary ",
           config.vocabulary_size, ", embedding ", config.embedding_size, ", hidden ",
           config.hidden_size);
  const ng::nn::NormSpec norm(config.norm);
  const std::int64_t V = config.vocabulary_size, E = config.embedding_size, H = config.hidden_size;
  const double center = config.init_center;
  const ng::DType dtype = config.dtype;

  const ng::nn::EmbeddingOptions embedding_options{.padding_index = std::nullopt, .dtype = dtype};
  source_embedding_ = register_module("source_embedding",
                                      std::make_shared<ng::nn::Embedding>(V, E, embedding_options));
  ng::NoGradGuard no_grad_init;
  source_embedding_->weight.copy_(nematus_weight(V, E, center, generator, dtype));
  if (!config.tie_target_embeddings) {
    target_embedding_ = register_module(
        "target_embedding", std::make_shared<ng::nn::Embedding>(V, E, embedding_options));
    target_embedding_->weight.copy_(nematus_weight(V, E, center, generator, dtype));
  }

  // Nematus's GRUs: the bias on the input side (before its norm), none on the state side.
  const ng::nn::RecurrentCellOptions encoder_cell{
      .norm = norm, .bias = true, .recurrent_bias = false, .dtype = dtype};
  encoder_ = register_module(
      "encoder", std::make_shared<ng::nn::Gru>(
                     E, H,
                     ng::nn::RecurrentOptions{
                         .cell = encoder_cell, .bidirectional = true, .batch_first = true},
                     generator));
  for (std::int64_t direction : {0, 1}) {
    initialise_gru(static_cast<ng::nn::GruCell&>(encoder_->cell(direction)), center, generator,
                   dtype);
  }
  init_state_ = register_module(
      "init_state", std::make_shared<NormalizedLinear>(
                        2 * H, H, norm, nematus_weight(H, 2 * H, center, generator, dtype)));

  decoder_gru1_ = register_module("decoder_gru1",
                                  std::make_shared<ng::nn::GruCell>(E, H, encoder_cell, generator));
  initialise_gru(*decoder_gru1_, center, generator, dtype);
  attention_ = register_module(
      "attention",
      std::make_shared<ng::nn::AdditiveAttention>(
          2 * H, H, 2 * H, ng::nn::AdditiveAttentionOptions{.norm = norm, .dtype = dtype}));
  initialise_attention(*attention_, center, generator, dtype);
  // GRU2 reads the context: its bias sits on the state side (Nematus's nematus_compat).
  const ng::nn::RecurrentCellOptions second_cell{
      .norm = norm, .bias = false, .recurrent_bias = true, .dtype = dtype};
  decoder_gru2_ = register_module(
      "decoder_gru2", std::make_shared<ng::nn::GruCell>(2 * H, H, second_cell, generator));
  initialise_gru(*decoder_gru2_, center, generator, dtype);

  output_from_embedding_ = register_module(
      "output_from_embedding", std::make_shared<NormalizedLinear>(
                                   E, E, norm, nematus_weight(E, E, center, generator, dtype)));
  output_from_state_ = register_module(
      "output_from_state", std::make_shared<NormalizedLinear>(
                               H, E, norm, nematus_weight(E, H, center, generator, dtype)));
  output_from_context_ =
      register_module("output_from_context",
                      std::make_shared<NormalizedLinear>(
                          2 * H, E, norm, nematus_weight(E, 2 * H, center, generator, dtype)));
  logits_ = register_module(
      "logits", std::make_shared<ng::nn::Linear>(E, V, ng::nn::LinearOptions{.dtype = dtype}));
  logits_->weight.copy_(nematus_weight(V, E, center, generator, dtype));
  logits_->bias.zero_();
}

namespace {

// x times the mask, or x when the mask is undefined.
ng::Tensor masked(const ng::Tensor& x, const ng::Tensor& mask) {
  return mask.defined() ? ng::mul(x, mask) : x;
}

}  // namespace

DropoutMasks RnnSearch::draw_dropout_masks(std::int64_t batch, ng::Generator& generator) const {
  const std::int64_t E = config_.embedding_size, H = config_.hidden_size;
  const ng::TensorOptions options{.dtype = activation_dtype_, .device = logits_->weight.device()};
  const auto draw = [&](ng::Shape shape, double p) {
    return p > 0 ? ng::nn::functional::dropout_mask(shape, p, generator, options) : ng::Tensor();
  };
  DropoutMasks masks;
  masks.source_embedding = draw({batch, 1, E}, config_.dropout_embedding);
  masks.target_embedding = draw({batch, 1, E}, config_.dropout_embedding);
  masks.encoder_state = draw({2, batch, H}, config_.dropout_hidden);
  masks.decoder_state1 = draw({batch, H}, config_.dropout_hidden);
  masks.decoder_state2 = draw({batch, H}, config_.dropout_hidden);
  masks.context = draw({batch, 2 * H}, config_.dropout_hidden);
  masks.output = draw({batch, 1, E}, config_.dropout_hidden);
  return masks;
}

EncodedSource RnnSearch::encode(const ng::Tensor& source, const ng::Tensor& source_lengths,
                                const ng::Tensor& source_padding, const DropoutMasks* dropout) {
  const DropoutMasks none;
  const DropoutMasks& masks = dropout != nullptr ? *dropout : none;
  const ng::Tensor embedded = masked(source_embedding_->forward(source).to(activation_dtype_),
                                     masks.source_embedding);  // [B, S, E]
  const ng::Tensor context =
      encoder_
          ->forward_lengths(embedded, source_lengths, ng::Tensor(), ng::Tensor(),
                            masks.encoder_state)
          .output;  // [B, S, 2H], 0 at padding
  // The mean over each sentence's real positions: padded positions hold zeros.
  const ng::Tensor lengths = source_lengths.to(context.dtype()).unsqueeze(1);  // [B, 1]
  const ng::Tensor mean_context = ng::div(ng::sum(context, {1}), lengths);     // [B, 2H]
  EncodedSource encoded;
  encoded.initial_state = ng::tanh(init_state_->forward(mean_context));
  encoded.attention = attention_->project_context(context, source_padding);
  return encoded;
}

ng::Tensor RnnSearch::embed_target(const ng::Tensor& tokens) {
  const ng::Tensor embedded =
      (config_.tie_target_embeddings ? ng::embedding(logits_->weight, tokens)
                                     : target_embedding_->forward(tokens))
          .to(activation_dtype_);
  // Nematus feeds the first decoder step a zero vector, not the embedding of a start token.
  const ng::Tensor not_start =
      ng::ne(tokens, static_cast<double>(ng::text::bos_id)).to(embedded.dtype());
  return ng::mul(embedded, not_start.unsqueeze(-1));
}

ng::Tensor RnnSearch::output_logits(const ng::Tensor& embedded, const ng::Tensor& state,
                                    const ng::Tensor& context, const ng::Tensor& output_dropout) {
  const ng::Tensor hidden = ng::tanh(ng::add(
      ng::add(output_from_embedding_->forward(embedded), output_from_state_->forward(state)),
      output_from_context_->forward(context)));
  return logits_->forward(masked(hidden, output_dropout));
}

RnnSearch::DecoderRun RnnSearch::run_decoder(const EncodedSource& source,
                                             const ng::Tensor& embedded,
                                             const std::vector<std::int64_t>* lengths,
                                             const DropoutMasks& masks, bool keep_states_read) {
  const std::int64_t batch = embedded.size(0), steps = embedded.size(1);
  // GRU1's input side of every step at once, [B, T, 3H], taken apart with unbind: its steps'
  // gradients then land in one buffer, where T select()s would each build a zero tensor of the
  // whole [B, T, 3H] in backward and make a step's time grow with T^2.
  const std::vector<ng::Tensor> gru1_input = ng::unbind(decoder_gru1_->input_side(embedded), 1);
  // What step t reads of the batch-sized tensors: their first `rows` rows, narrowed again only
  // when a sentence ends.
  const auto first_rows = [](const ng::Tensor& x, std::int64_t rows) {
    return !x.defined() || x.size(0) == rows ? x : x.narrow(0, 0, rows);
  };
  ng::nn::AdditiveAttention::ProjectedContext attention = source.attention;
  ng::Tensor state = source.initial_state, state1_mask = masks.decoder_state1,
             state2_mask = masks.decoder_state2, context_mask = masks.context;
  DecoderRun run;
  std::int64_t rows = batch;
  for (std::int64_t t = 0; t < steps; ++t) {
    if (lengths != nullptr) {
      while (rows > 0 && (*lengths)[static_cast<std::size_t>(rows - 1)] <= t) --rows;
      if (rows == 0) break;
      if (state.size(0) != rows) {
        state = first_rows(state, rows);
        attention = {first_rows(attention.context, rows), first_rows(attention.projected, rows),
                     first_rows(attention.padding_mask, rows)};
        state1_mask = first_rows(state1_mask, rows);
        state2_mask = first_rows(state2_mask, rows);
        context_mask = first_rows(context_mask, rows);
      }
    }
    if (keep_states_read) run.states_read.push_back(state);
    const ng::Tensor intermediate =
        decoder_gru1_->step(first_rows(gru1_input[static_cast<std::size_t>(t)], rows), {state},
                            ng::Tensor(), state1_mask)[0];
    const ng::Tensor context =
        masked(attention_->attend(attention, intermediate).output, context_mask);
    state = decoder_gru2_->step(decoder_gru2_->input_side(context), {intermediate}, ng::Tensor(),
                                state2_mask)[0];
    run.states.push_back(state);
    run.contexts.push_back(context);
  }
  return run;
}

ng::Tensor RnnSearch::forward(const EncodedSource& source, const ng::Tensor& target_input,
                              ng::Tensor* states_read, const DropoutMasks* dropout) {
  NG_CHECK(target_input.dim() == 2, "RnnSearch::forward",
           "target_input must be [batch, steps], got ", target_input.shape());
  const DropoutMasks none;
  const DropoutMasks& masks = dropout != nullptr ? *dropout : none;
  const ng::Tensor embedded =
      masked(embed_target(target_input), masks.target_embedding);  // [B, T, E]
  const DecoderRun run = run_decoder(source, embedded, nullptr, masks, states_read != nullptr);
  if (states_read != nullptr) *states_read = ng::stack(run.states_read, 1);
  // The deep output of every step at once.
  return output_logits(embedded, ng::stack(run.states, 1), ng::stack(run.contexts, 1),
                       masks.output);
}

std::vector<std::int64_t> packed_positions(const std::vector<std::int64_t>& lengths,
                                           std::int64_t steps) {
  std::vector<std::int64_t> positions;
  for (std::size_t b = 0; b < lengths.size(); ++b) {
    NG_CHECK(lengths[b] >= 0 && lengths[b] <= steps, "gru_nmt packed_positions", "row ", b,
             " has length ", lengths[b], " in a batch of ", steps, " steps");
    NG_CHECK(b == 0 || lengths[b] <= lengths[b - 1], "gru_nmt packed_positions",
             "rows must be sorted by length, longest first; row ", b, " has ", lengths[b],
             " after ", lengths[b - 1]);
  }
  const auto batch = static_cast<std::int64_t>(lengths.size());
  for (std::int64_t t = 0; t < steps; ++t)
    for (std::int64_t b = 0; b < batch && lengths[static_cast<std::size_t>(b)] > t; ++b)
      positions.push_back(b * steps + t);
  return positions;
}

RnnSearch::PackedLogits RnnSearch::forward_packed(const EncodedSource& source,
                                                  const ng::Tensor& target_input,
                                                  const std::vector<std::int64_t>& target_lengths,
                                                  const DropoutMasks* dropout) {
  NG_CHECK(target_input.dim() == 2 &&
               target_input.size(0) == static_cast<std::int64_t>(target_lengths.size()),
           "RnnSearch::forward_packed",
           "target_input must be [batch, steps] with one length per row, got ",
           target_input.shape(), " and ", target_lengths.size(), " lengths");
  const DropoutMasks none;
  const DropoutMasks& masks = dropout != nullptr ? *dropout : none;
  const std::int64_t batch = target_input.size(0), steps = target_input.size(1);
  const std::vector<std::int64_t> positions = packed_positions(target_lengths, steps);
  const ng::Tensor embedded =
      masked(embed_target(target_input), masks.target_embedding);  // [B, T, E]
  const DecoderRun run = run_decoder(source, embedded, &target_lengths, masks, false);
  const ng::Tensor index = ng::from_vector(positions, {static_cast<std::int64_t>(positions.size())})
                               .to(target_input.device());
  const auto packed = [&](const ng::Tensor& x) {  // [B, T, D] -> [N, D] at the real positions
    return ng::index_select(x.reshape({batch * steps, x.size(-1)}), 0, index);
  };
  ng::Tensor output_mask;
  if (masks.output.defined()) {  // [B, 1, E]: each position takes its row's
    std::vector<std::int64_t> row_of;
    row_of.reserve(positions.size());
    for (const std::int64_t position : positions) row_of.push_back(position / steps);
    output_mask =
        ng::index_select(masks.output.reshape({batch, masks.output.size(-1)}), 0,
                         ng::from_vector(row_of, {static_cast<std::int64_t>(row_of.size())})
                             .to(target_input.device()));
  }
  return {output_logits(packed(embedded), ng::cat(run.states, 0), ng::cat(run.contexts, 0),
                        output_mask),
          index};
}

RnnSearch::Step RnnSearch::step(const ng::nn::AdditiveAttention::ProjectedContext& source,
                                const ng::Tensor& previous_tokens, const ng::Tensor& state) {
  const ng::Tensor embedded = embed_target(previous_tokens);  // [R, E]
  const ng::Tensor intermediate = decoder_gru1_->forward(embedded, state);
  const ng::Tensor context = attention_->attend(source, intermediate).output;
  const ng::Tensor next =
      decoder_gru2_->step(decoder_gru2_->input_side(context), {intermediate}, ng::Tensor())[0];
  return {output_logits(embedded, next, context).to(config_.dtype), next};
}

ng::Tensor RnnSearch::decoder_state_projection(const ng::Tensor& state) const {
  const ng::Tensor weight = decoder_gru1_->weight_hh();
  return ng::nn::functional::linear(state, ng::in_input_dtype(weight, state),
                                    ng::in_input_dtype(decoder_gru1_->bias_hh, state))
      .to(config_.dtype);
}

}  // namespace gru_nmt
