// The RNNSearch model of examples/gru_nmt: gradients in float64 for each norm, the step-wise
// decoder against teacher forcing, padding, tied embeddings and Nematus's initialisation.
#include <doctest/doctest.h>

#include <cmath>

#include "gru_nmt/analysis.h"
#include "gru_nmt/model.h"
#include "gru_nmt/training.h"
#include "gru_nmt/translation.h"
#include "module_gradcheck.h"
#include "parallel_text_fixture.h"

using namespace normgrad;

namespace {

gru_nmt::ModelConfig tiny_config(const std::string& norm, DType dtype = DType::Float64) {
  return {
      .vocabulary_size = 9, .embedding_size = 3, .hidden_size = 4, .norm = norm, .dtype = dtype};
}

struct TinyBatch {
  Tensor source = from_vector<std::int64_t>({5, 6, 7, 3, 8, 3, 0, 0}, {2, 4});
  Tensor source_lengths = from_vector<std::int64_t>({4, 2}, {2});
  Tensor source_padding = from_vector<std::int64_t>({0, 0, 0, 0, 0, 0, 1, 1}, {2, 4});
  Tensor target_input = from_vector<std::int64_t>({2, 4, 5, 2, 6, 7}, {2, 3});
};

// tiny_config with dropout on the embeddings (0.3) and the hidden states (0.4).
gru_nmt::ModelConfig tiny_dropout_config(const char* norm) {
  auto config = tiny_config(norm);
  config.dropout_embedding = 0.3;
  config.dropout_hidden = 0.4;
  return config;
}

// TinyBatch as a training batch: the targets y_1 .. y_T and eos, the second sentence ending
// one step early (padding after it).
text::TranslationBatch tiny_training_batch() {
  const TinyBatch tiny;
  text::TranslationBatch batch;
  batch.pairs = {0, 1};
  batch.source = tiny.source;
  batch.source_lengths = tiny.source_lengths;
  batch.source_padding = tiny.source_padding;
  batch.target_input = tiny.target_input;
  batch.target_output = from_vector<std::int64_t>({4, 5, 3, 6, 3, 0}, {2, 3});
  batch.target_lengths = from_vector<std::int64_t>({3, 2}, {2});
  batch.target_padding = from_vector<std::int64_t>({0, 0, 0, 0, 0, 1}, {2, 3});
  batch.target_tokens = 5;
  return batch;
}

// The same batch with its rows the other way round: the shorter sentence first.
text::TranslationBatch tiny_training_batch_reversed() {
  text::TranslationBatch batch = tiny_training_batch();
  const Tensor swap = from_vector<std::int64_t>({1, 0}, {2});
  batch.pairs = {1, 0};
  for (Tensor* rows :
       {&batch.source, &batch.source_lengths, &batch.source_padding, &batch.target_input,
        &batch.target_output, &batch.target_lengths, &batch.target_padding})
    *rows = index_select(*rows, 0, swap);
  return batch;
}

Tensor parameter(const nn::Module& module, const std::string& name) {
  for (const auto& [key, value] : module.named_parameters())
    if (key == name) return value;
  FAIL("no parameter " << name);
  return Tensor();
}

bool has_parameter(const nn::Module& module, const std::string& name) {
  for (const auto& entry : module.named_parameters())
    if (entry.first == name) return true;
  return false;
}

std::vector<double> identity(std::int64_t n) {
  std::vector<double> values(n * n, 0.0);
  for (std::int64_t i = 0; i < n; ++i) values[i * n + i] = 1.0;
  return values;
}

}  // namespace

TEST_CASE("RnnSearch's gradients agree with finite differences for every norm of the paper") {
  for (const char* norm :
       {"none", "layernorm", "rmsnorm", "prmsnorm:0.5", "l2norm", "weightnorm"}) {
    INFO("norm " << norm);
    Generator generator(1);
    gru_nmt::RnnSearch model(tiny_config(norm), generator);
    testing::randomise(model, 3);
    const TinyBatch batch;
    CHECK_PARAMETER_GRADIENTS(model, [&] {
      const auto encoded = model.encode(batch.source, batch.source_lengths, batch.source_padding);
      return model.forward(encoded, batch.target_input);
    });
  }
}

TEST_CASE(
    "RnnSearch with dropout: masks of the right shapes, reused at every position, with exact "
    "gradients") {
  Generator generator(31);
  gru_nmt::RnnSearch model(tiny_dropout_config("rmsnorm"), generator);
  testing::randomise(model, 32);
  const TinyBatch batch;
  const gru_nmt::DropoutMasks masks = model.draw_dropout_masks(2, generator);
  CHECK(masks.source_embedding.shape() == Shape({2, 1, 3}));
  CHECK(masks.target_embedding.shape() == Shape({2, 1, 3}));
  CHECK(masks.encoder_state.shape() == Shape({2, 2, 4}));
  CHECK(masks.decoder_state1.shape() == Shape({2, 4}));
  CHECK(masks.decoder_state2.shape() == Shape({2, 4}));
  CHECK(masks.context.shape() == Shape({2, 8}));
  CHECK(masks.output.shape() == Shape({2, 1, 3}));
  const auto logits = [&](const gru_nmt::DropoutMasks* dropout) {
    const auto encoded =
        model.encode(batch.source, batch.source_lengths, batch.source_padding, dropout);
    return model.forward(encoded, batch.target_input, nullptr, dropout);
  };
  // Through fixed masks the model is an ordinary function of its parameters.
  CHECK_PARAMETER_GRADIENTS(model, [&] { return logits(&masks); });

  NoGradGuard no_grad;
  CHECK_FALSE(testing::all_close(logits(&masks), logits(nullptr).to_vector<double>(), 1e-6, 1e-6));
  // Masks of ones are no dropout at all.
  gru_nmt::DropoutMasks ones_masks;
  for (auto [mask, from] : {std::pair{&ones_masks.source_embedding, &masks.source_embedding},
                            std::pair{&ones_masks.target_embedding, &masks.target_embedding},
                            std::pair{&ones_masks.encoder_state, &masks.encoder_state},
                            std::pair{&ones_masks.decoder_state1, &masks.decoder_state1},
                            std::pair{&ones_masks.decoder_state2, &masks.decoder_state2},
                            std::pair{&ones_masks.context, &masks.context},
                            std::pair{&ones_masks.output, &masks.output}})
    *mask = ones_like(*from);
  CHECK(testing::all_close(logits(&ones_masks), logits(nullptr).to_vector<double>(), 0, 0));
  // One output mask per sentence, at every position: zero for sentence 0 leaves only the
  // logit bias at each of its positions.
  gru_nmt::DropoutMasks output_only;
  output_only.output = from_vector<double>({0, 0, 0, 1, 1, 1}, {2, 1, 3});
  const Tensor dropped = logits(&output_only);
  const Tensor bias = parameter(model, "logits.bias");
  for (std::int64_t t = 0; t < 3; ++t)
    CHECK(testing::all_close(dropped.select(0, 0).select(0, t).contiguous(),
                             bias.to_vector<double>(), 1e-15, 0));
  // No dropout configured: no masks.
  Generator other(33);
  const auto none = gru_nmt::RnnSearch(tiny_config("rmsnorm"), other).draw_dropout_masks(2, other);
  CHECK_FALSE(none.output.defined());
  CHECK_FALSE(none.encoder_state.defined());
}

TEST_CASE("train_step with dropout draws its masks from the given generator, and needs one") {
  auto config = tiny_config("layernorm");
  config.dropout_hidden = 0.5;
  const text::TranslationBatch batch = tiny_training_batch();
  const auto loss_with_seed = [&](std::uint64_t seed) {
    Generator init(34);
    gru_nmt::RnnSearch model(config, init);
    optim::Adam adam(model.parameters(), {.lr = 0.01});
    Generator masks(seed);
    return gru_nmt::train_step(model, adam, batch, {.dropout_generator = &masks}).loss;
  };
  CHECK(loss_with_seed(1) == loss_with_seed(1));
  CHECK(loss_with_seed(1) != loss_with_seed(2));
  Generator init(34);
  gru_nmt::RnnSearch model(config, init);
  optim::Adam adam(model.parameters(), {.lr = 0.01});
  CHECK_ERROR(gru_nmt::train_step(model, adam, batch), "train_step", "dropout", "no generator");
}

TEST_CASE("RnnSearch's step-wise decoder gives the logits of teacher forcing") {
  Generator generator(2);
  gru_nmt::RnnSearch model(tiny_config("rmsnorm"), generator);
  testing::randomise(model, 4);
  const TinyBatch batch;
  NoGradGuard no_grad;
  const auto encoded = model.encode(batch.source, batch.source_lengths, batch.source_padding);
  const Tensor all = model.forward(encoded, batch.target_input);  // [2, 3, 9]
  Tensor state = encoded.initial_state;
  for (std::int64_t t = 0; t < 3; ++t) {
    const auto step =
        model.step(encoded.attention, batch.target_input.select(1, t).contiguous(), state);
    CHECK(testing::all_close(step.logits, all.select(1, t).contiguous().to_vector<double>(), 1e-12,
                             1e-12));
    state = step.state;
  }
}

TEST_CASE("RnnSearch in mixed precision stays within bfloat16's tolerance of float32") {
  for (const std::string norm : {"none", "layernorm", "rmsnorm", "weightnorm"}) {
    CAPTURE(norm);
    auto config = tiny_config(norm, DType::Float32);
    config.embedding_size = 16;
    config.hidden_size = 24;
    config.dropout_hidden = 0.2;
    const text::TranslationBatch batch = gru_nmt::sort_by_target_length(tiny_training_batch());
    struct Run {
      double loss = 0;
      std::vector<Tensor> gradients;
      std::vector<Tensor> step_logits, forced_logits;
    };
    const auto run = [&](const std::string& precision) {
      config.precision = precision;
      Generator init(41);
      gru_nmt::RnnSearch model(config, init);
      testing::randomise(model, 42);
      Generator masks_generator(43);
      const auto masks = model.draw_dropout_masks(2, masks_generator);
      const Tensor loss = gru_nmt::batch_loss(model, batch, 0.1, &masks);
      loss.backward();
      Run result;
      result.loss = loss.item();
      for (const auto& parameter : model.parameters()) result.gradients.push_back(parameter.grad());
      // The step-wise decoder's logits, and teacher forcing's, without dropout.
      NoGradGuard no_grad;
      const auto encoded = model.encode(batch.source, batch.source_lengths, batch.source_padding);
      const Tensor forced = model.forward(encoded, batch.target_input);
      Tensor state = encoded.initial_state;
      for (std::int64_t t = 0; t < 3; ++t) {
        const auto step =
            model.step(encoded.attention, batch.target_input.select(1, t).contiguous(), state);
        result.step_logits.push_back(step.logits);
        result.forced_logits.push_back(forced.select(1, t).contiguous());
        state = step.state;
      }
      return result;
    };
    const Run single = run("float32"), mixed = run("bfloat16");
    // With these weights (N(0, 0.5^2)) the loss is 7.7 to 10.9 a sentence. Measured over the
    // four norms: the loss within 0.3% of float32's, the gradients within 3.4% in norm, the
    // step-wise logits within 0.040, and bit for bit teacher forcing's in bfloat16. The bounds
    // leave room of about 3x (and of two bfloat16 steps against teacher forcing).
    CHECK(mixed.loss == doctest::Approx(single.loss).epsilon(0.01));
    for (const Tensor& gradient : mixed.gradients) CHECK(gradient.dtype() == DType::Float32);
    const double difference =
        testing::compare_as_vectors(mixed.gradients, single.gradients).distance;
    INFO("relative gradient difference " << difference);
    CHECK(difference < 0.1);
    for (std::size_t t = 0; t < 3; ++t) {
      CAPTURE(t);
      CHECK(mixed.forced_logits[t].dtype() == DType::BFloat16);
      CHECK(mixed.step_logits[t].dtype() == DType::Float32);  // a search adds in float32
      const Tensor mixed_step = mixed.step_logits[t], single_step = single.step_logits[t];
      const double error = (mixed_step - single_step).abs().max().item();
      const double paths =
          (mixed_step - mixed.forced_logits[t].to(DType::Float32)).abs().max().item();
      CAPTURE(error);
      CAPTURE(paths);
      CHECK(error < 0.1);
      // One product over all steps against one a step may round a logit to the neighbouring
      // bfloat16: within 2u of the largest.
      CHECK(paths <= 2 * 0x1p-8 * mixed_step.abs().max().item());
    }
  }
}

TEST_CASE("RnnSearch: a padded sentence in a batch is translated as it is alone") {
  Generator generator(5);
  gru_nmt::RnnSearch model(tiny_config("layernorm"), generator);
  testing::randomise(model, 6);
  const TinyBatch batch;
  NoGradGuard no_grad;
  const auto both = model.forward(
      model.encode(batch.source, batch.source_lengths, batch.source_padding), batch.target_input);
  const Tensor alone_source = from_vector<std::int64_t>({8, 3}, {1, 2});
  const auto alone = model.forward(model.encode(alone_source, from_vector<std::int64_t>({2}, {1}),
                                                from_vector<std::int64_t>({0, 0}, {1, 2})),
                                   batch.target_input.select(0, 1).unsqueeze(0).contiguous());
  CHECK(testing::all_close(both.select(0, 1).contiguous(),
                           alone.select(0, 0).contiguous().to_vector<double>(), 1e-12, 1e-12));
}

TEST_CASE("RnnSearch starts from Nematus's initialisation, shifted by init_center") {
  Generator generator(7);
  auto config = tiny_config("none", DType::Float32);
  config.vocabulary_size = 400;
  config.embedding_size = 8;
  config.hidden_size = 8;
  gru_nmt::RnnSearch model(config, generator);
  // The decoder's first GRU: W_hh [3H, H] is three orthogonal blocks; W_ih [3H, E] with E = H
  // too; biases zero.
  const Tensor w_hh = parameter(model, "decoder_gru1.weight_hh");
  for (std::int64_t block = 0; block < 3; ++block) {
    const Tensor q = w_hh.narrow(0, block * 8, 8);
    CHECK(testing::all_close(matmul(q.t(), q), identity(8), 1e-5, 1e-5));
  }
  CHECK(testing::all_close(parameter(model, "decoder_gru1.bias_ih"), std::vector<double>(24, 0.0),
                           0, 0));
  // Non-square matrices: N(0, 0.01^2).
  const auto embedding = parameter(model, "source_embedding.weight").to_vector<double>();
  double sum = 0, squares = 0;
  for (double v : embedding) sum += v, squares += v * v;
  const double mean = sum / embedding.size();
  const double sd = std::sqrt(squares / embedding.size() - mean * mean);
  CHECK(std::abs(mean) < 0.002);
  CHECK(sd == doctest::Approx(0.01).epsilon(0.1));

  config.init_center = 0.2;
  Generator shifted_generator(7);
  gru_nmt::RnnSearch shifted(config, shifted_generator);
  const auto shifted_embedding = parameter(shifted, "source_embedding.weight").to_vector<double>();
  CHECK(shifted_embedding[0] == doctest::Approx(embedding[0] + 0.2).epsilon(1e-6));
}

TEST_CASE("RnnSearch with tied target embeddings reads the output layer's weight") {
  Generator generator(8);
  auto config = tiny_config("rmsnorm");
  config.tie_target_embeddings = true;
  gru_nmt::RnnSearch tied(config, generator);
  Generator untied_generator(8);
  gru_nmt::RnnSearch untied(tiny_config("rmsnorm"), untied_generator);
  CHECK(tied.parameters().size() + 1 == untied.parameters().size());
  CHECK_FALSE(has_parameter(tied, "target_embedding.weight"));
  testing::randomise(tied, 9);
  const TinyBatch batch;
  CHECK_PARAMETER_GRADIENTS(tied, [&] {
    return tied.forward(tied.encode(batch.source, batch.source_lengths, batch.source_padding),
                        batch.target_input);
  });
}

TEST_CASE("RnnSearch refuses impossible sizes and precisions") {
  Generator generator(1);
  CHECK_ERROR(gru_nmt::RnnSearch({.vocabulary_size = 3}, generator), "RnnSearch",
              "vocabulary_size must be > 4");
  CHECK_ERROR(gru_nmt::RnnSearch({.hidden_size = 0}, generator), "hidden 0");
  CHECK_ERROR(gru_nmt::RnnSearch({.precision = "half"}, generator), "gru_nmt", "precision", "half");
  CHECK_ERROR(gru_nmt::RnnSearch({.dtype = DType::Float64, .precision = "bfloat16"}, generator),
              "bfloat16 activations need float32 parameters", "float64");
}

TEST_CASE(
    "RnnSearch decodes with the library's beam search: greedy is the argmax loop, and a batch is "
    "its sentences") {
  Generator generator(11);
  gru_nmt::RnnSearch model(tiny_config("rmsnorm"), generator);
  testing::randomise(model, 12);
  const TinyBatch batch;
  decoding::BeamSearchOptions greedy{.beam_size = 1, .bos = 2, .eos = 3, .max_length_b = 6};
  const auto results = gru_nmt::translate_batch(model, batch.source, batch.source_lengths,
                                                batch.source_padding, greedy);
  REQUIRE(results.size() == 2);

  // The same by hand for the first sentence: feed the argmax back until eos or 6 tokens.
  NoGradGuard no_grad;
  const auto encoded = model.encode(batch.source, batch.source_lengths, batch.source_padding);
  auto context = encoded.attention;
  context.context = context.context.narrow(0, 0, 1);
  context.projected = context.projected.narrow(0, 0, 1);
  context.padding_mask = context.padding_mask.narrow(0, 0, 1);
  Tensor state = encoded.initial_state.narrow(0, 0, 1);
  std::int64_t token = 2;
  std::vector<std::int64_t> expected;
  double log_prob = 0;
  for (int t = 0; t < 6; ++t) {
    const auto step = model.step(context, from_vector<std::int64_t>({token}, {1}), state);
    state = step.state;
    const Tensor log_probs = log_softmax(step.logits, -1);
    token = argmax(log_probs, -1).item<std::int64_t>();
    log_prob += log_probs.to_vector<double>()[token];
    if (token == 3) break;
    expected.push_back(token);
  }
  CHECK(results[0][0].tokens == expected);
  CHECK(results[0][0].log_prob == doctest::Approx(log_prob).epsilon(1e-12));

  // Beam 3 on the batch against each sentence alone.
  decoding::BeamSearchOptions beam{
      .beam_size = 3, .n_best = 3, .bos = 2, .eos = 3, .max_length_b = 6};
  const auto together = gru_nmt::translate_batch(model, batch.source, batch.source_lengths,
                                                 batch.source_padding, beam);
  for (std::int64_t s = 0; s < 2; ++s) {
    const auto length = batch.source_lengths.to_vector<std::int64_t>()[s];
    const auto alone = gru_nmt::translate_batch(
        model, batch.source.narrow(0, s, 1).narrow(1, 0, length).contiguous(),
        from_vector<std::int64_t>({length}, {1}), zeros({1, length}, {.dtype = DType::Int64}),
        beam);
    REQUIRE(alone[0].size() == together[s].size());
    for (std::size_t n = 0; n < alone[0].size(); ++n) {
      CHECK(alone[0][n].tokens == together[s][n].tokens);
      CHECK(alone[0][n].score == doctest::Approx(together[s][n].score).epsilon(1e-10));
    }
  }
}

TEST_CASE("RnnSearch learns the fixture corpus: its loss falls within a few Adam steps") {
  const auto corpus = testing::small_parallel_corpus("gru_nmt_learns", 200);
  const auto tokenizer =
      text::SubwordTokenizer::train({corpus.source, corpus.target}, {.vocabulary_size = 120});
  const auto dataset =
      text::ParallelDataset::load(corpus.source, corpus.target, tokenizer, {.use_cache = false});
  text::TranslationBatches batches(dataset, {.max_sentences = 16, .shuffle = false});
  const auto batch = batches.make_batch(batches.epoch_plan(0)[3]);
  for (const std::string precision : {"float32", "bfloat16"}) {
    CAPTURE(precision);
    Generator generator(21);
    gru_nmt::RnnSearch model({.vocabulary_size = tokenizer.vocabulary_size(),
                              .embedding_size = 16,
                              .hidden_size = 24,
                              .norm = "rmsnorm",
                              .precision = precision},
                             generator);
    optim::Adam adam(model.parameters(), {.lr = 0.01});
    const double first = gru_nmt::train_step(model, adam, batch).token_loss;
    double last = first;
    for (int step = 0; step < 60; ++step) last = gru_nmt::train_step(model, adam, batch).token_loss;
    MESSAGE(precision << ": token loss " << first << " -> " << last);
    CHECK(first == doctest::Approx(std::log(120.0)).epsilon(0.05));  // about uniform at the start
    CHECK(last < 0.5 * first);
  }
}

TEST_CASE(
    "batch_loss sums each sentence's token losses and averages over sentences, padding excluded") {
  Generator generator(13);
  gru_nmt::RnnSearch model(tiny_config("none"), generator);
  testing::randomise(model, 14);
  const TinyBatch tiny;
  const text::TranslationBatch batch = tiny_training_batch();
  const double loss = gru_nmt::batch_loss(model, batch, 0.0).item();
  NoGradGuard no_grad;
  const Tensor log_probs =
      log_softmax(model.forward(model.encode(tiny.source, tiny.source_lengths, tiny.source_padding),
                                tiny.target_input),
                  -1);
  const auto lp = log_probs.to_vector<double>();  // [2, 3, 9]
  const auto at = [&](int b, int t, int v) { return lp[(b * 3 + t) * 9 + v]; };
  const double expected =
      -(at(0, 0, 4) + at(0, 1, 5) + at(0, 2, 3) + at(1, 0, 6) + at(1, 1, 3)) / 2;
  CHECK(loss == doctest::Approx(expected).epsilon(1e-12));
}

TEST_CASE(
    "forward_packed gives forward's logits at the real positions, time-major, with exact "
    "gradients") {
  Generator generator(41);
  gru_nmt::RnnSearch model(tiny_dropout_config("layernorm"), generator);
  testing::randomise(model, 42);
  const TinyBatch batch;  // target lengths 3 and 2
  const std::vector<std::int64_t> lengths = {3, 2};
  const std::vector<std::int64_t> positions = gru_nmt::packed_positions(lengths, 3);
  CHECK(positions == std::vector<std::int64_t>({0, 3, 1, 4, 2}));
  {
    NoGradGuard no_grad;
    const auto encoded = model.encode(batch.source, batch.source_lengths, batch.source_padding);
    CHECK(model.forward_packed(encoded, batch.target_input, lengths)
              .positions.to_vector<std::int64_t>() == positions);
  }
  const gru_nmt::DropoutMasks masks = model.draw_dropout_masks(2, generator);
  for (const gru_nmt::DropoutMasks* dropout :
       {static_cast<const gru_nmt::DropoutMasks*>(nullptr), &masks}) {
    INFO("dropout " << (dropout != nullptr));
    const auto packed = [&] {
      const auto encoded =
          model.encode(batch.source, batch.source_lengths, batch.source_padding, dropout);
      return model.forward_packed(encoded, batch.target_input, lengths, dropout).logits;
    };
    CHECK_PARAMETER_GRADIENTS(model, packed);
    NoGradGuard no_grad;
    const Tensor full = model.forward(
        model.encode(batch.source, batch.source_lengths, batch.source_padding, dropout),
        batch.target_input, nullptr, dropout);  // [2, 3, V]
    const Tensor expected =
        index_select(full.reshape({6, full.size(-1)}), 0, from_vector(positions, {5}));
    const Tensor got = packed();
    CHECK(got.shape() == expected.shape());
    CHECK(testing::all_close(got, expected.to_vector<double>(), 1e-12, 1e-12));
  }
}

TEST_CASE("batch_loss does not depend on the order of a batch's rows, and wants them sorted") {
  Generator generator(43);
  gru_nmt::RnnSearch model(tiny_config("rmsnorm"), generator);
  testing::randomise(model, 44);
  const text::TranslationBatch reversed = tiny_training_batch_reversed();
  const text::TranslationBatch sorted = gru_nmt::sort_by_target_length(reversed);
  CHECK(sorted.pairs == std::vector<std::size_t>({0, 1}));
  CHECK(sorted.target_lengths.to_vector<std::int64_t>() == std::vector<std::int64_t>({3, 2}));
  CHECK(sorted.source.to_vector<std::int64_t>() ==
        tiny_training_batch().source.to_vector<std::int64_t>());
  CHECK(gru_nmt::batch_loss(model, sorted, 0.1).item() ==
        doctest::Approx(gru_nmt::batch_loss(model, tiny_training_batch(), 0.1).item())
            .epsilon(1e-12));
  CHECK_ERROR(gru_nmt::batch_loss(model, reversed, 0.1), "sorted by length");
  CHECK_ERROR(gru_nmt::packed_positions({2, 4}, 4), "row 1 has 4 after 2");
  CHECK_ERROR(gru_nmt::packed_positions({5}, 4), "row 0 has length 5 in a batch of 4 steps");
}

TEST_CASE(
    "RnnSearch's first decoder step reads a zero vector, whatever the start token's embedding") {
  Generator generator(15);
  gru_nmt::RnnSearch model(tiny_config("layernorm"), generator);
  testing::randomise(model, 16);
  const TinyBatch batch;  // target_input starts with bos (2) in both rows
  NoGradGuard no_grad;
  const auto encoded = model.encode(batch.source, batch.source_lengths, batch.source_padding);
  const auto before = model.forward(encoded, batch.target_input).to_vector<double>();
  parameter(model, "target_embedding.weight").select(0, text::bos_id).fill_(7.0);
  CHECK(testing::all_close(model.forward(encoded, batch.target_input), before, 0, 0));
  parameter(model, "target_embedding.weight").select(0, 4).fill_(7.0);  // a real token: it matters
  CHECK_FALSE(testing::all_close(model.forward(encoded, batch.target_input), before, 1e-6, 1e-6));
}

TEST_CASE(
    "Table 5's statistics: mean and deviation of U h at positions 1 to 4 and over all real "
    "positions") {
  const auto corpus = testing::small_parallel_corpus("gru_nmt_table5", 40);
  const auto tokenizer =
      text::SubwordTokenizer::train({corpus.source, corpus.target}, {.vocabulary_size = 90});
  const auto dataset =
      text::ParallelDataset::load(corpus.source, corpus.target, tokenizer, {.use_cache = false});
  Generator generator(17);
  auto config = tiny_config("rmsnorm");
  config.vocabulary_size = tokenizer.vocabulary_size();
  gru_nmt::RnnSearch model(config, generator);
  testing::randomise(model, 18);
  const auto statistics = gru_nmt::hidden_to_hidden_statistics(model, dataset, 16, Device::cpu());

  // The same by hand: every pair alone, its states through U h, only its real positions.
  std::array<double, 4> sum{}, squares{};
  std::array<std::int64_t, 4> count{};
  double all_sum = 0;
  std::int64_t all_count = 0;
  text::TranslationBatches batches(dataset, {.max_sentences = 1, .shuffle = false});
  NoGradGuard no_grad;
  for (std::size_t pair = 0; pair < dataset.size(); ++pair) {
    const auto batch = batches.make_batch(std::vector<std::size_t>{pair});
    Tensor states;
    model.forward(model.encode(batch.source, batch.source_lengths, batch.source_padding),
                  batch.target_input, &states);
    const auto values = model.decoder_state_projection(states).to_vector<double>();
    const std::int64_t width = 3 * config.hidden_size;
    for (std::size_t i = 0; i < values.size(); ++i) {
      const auto t = static_cast<std::size_t>(static_cast<std::int64_t>(i) / width);
      all_sum += values[i];
      ++all_count;
      if (t < 4) sum[t] += values[i], squares[t] += values[i] * values[i], ++count[t];
    }
  }
  for (std::size_t t = 0; t < 4; ++t) {
    INFO("position " << t + 1);
    CHECK(statistics.values[t] == count[t]);
    const double mean = sum[t] / count[t];
    CHECK(statistics.mean[t] == doctest::Approx(mean).epsilon(1e-9));
    CHECK(statistics.deviation[t] ==
          doctest::Approx(std::sqrt(squares[t] / count[t] - mean * mean)).epsilon(1e-9));
  }
  CHECK(statistics.mean_all == doctest::Approx(all_sum / all_count).epsilon(1e-9));
  CHECK(statistics.deviation_all > 0);
}
