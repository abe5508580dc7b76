// examples/transformer_nmt's model, decoding and training step: the cached decoder against a
// recomputation of the prefix, tied and untied embeddings, gradients, the schedule, a loss that
// falls, and checkpoint averaging.
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>

#include "text/translation_batches.h"
#include "helpers.h"
#include "module_gradcheck.h"
#include "nmt/checkpoint_average.h"
#include "nmt/sentence_batches.h"
#include "parallel_text_fixture.h"
#include "scratch_folder.h"
#include "transformer_nmt/model.h"
#include "transformer_nmt/training.h"
#include "transformer_nmt/translation.h"

using namespace normgrad;

namespace {

transformer_nmt::ModelConfig tiny_config(const std::string& norm = "rmsnorm") {
  return {.vocabulary_size = 24,
          .model_size = 8,
          .feed_forward_size = 12,
          .heads = 2,
          .encoder_layers = 2,
          .decoder_layers = 2,
          .dropout = 0.0,
          .norm = norm,
          .pre_norm = false,
          .tie_embeddings = true,
          .dtype = DType::Float64};
}

// Three sources of lengths 5, 3 and 4 (eos included), padded to 5.
nmt::SourceBatch three_sources() {
  return nmt::make_source_batch({{4, 5, 6, 7}, {8, 9}, {10, 11, 12}}, Device::cpu());
}

// The largest |a - b| over two tensors of one shape, compared in float64.
double max_abs_diff(const Tensor& a, const Tensor& b) {
  REQUIRE(a.shape() == b.shape());
  const auto x = a.to(DType::Float64).to_vector<double>(),
             y = b.to(DType::Float64).to_vector<double>();
  double largest = 0;
  for (std::size_t i = 0; i < x.size(); ++i) largest = std::max(largest, std::fabs(x[i] - y[i]));
  return largest;
}

std::int64_t parameter_count(const nn::Module& module) {
  std::int64_t count = 0;
  for (const auto& parameter : module.parameters()) count += parameter.numel();
  return count;
}

}  // namespace

TEST_CASE("transformer_nmt: the cached decoder's log-probabilities equal a recomputation's") {
  for (const bool pre_norm : {false, true}) {
    for (const bool tied : {true, false}) {
      CAPTURE(pre_norm);
      CAPTURE(tied);
      auto config = tiny_config();
      config.pre_norm = pre_norm;
      config.tie_embeddings = tied;
      Generator generator(3);
      transformer_nmt::TransformerNmt model(config, generator);
      testing::randomise(model, 5);
      model.eval();
      NoGradGuard no_grad;
      const auto source = three_sources();
      const Tensor memory = model.encode(source.ids, source.padding);
      transformer_nmt::TransformerNmtDecoder cached(model, memory, source.padding);
      transformer_nmt::UncachedDecoder uncached(model, memory, source.padding);
      // Feed the same tokens to both, reordering the rows as a beam search would midway.
      const std::vector<std::vector<std::int64_t>> feeds{
          {2, 2, 2}, {5, 9, 13}, {6, 7, 8}, {20, 21, 22, 23}, {4, 4, 4, 4}};
      for (std::size_t t = 0; t < feeds.size(); ++t) {
        if (t == 3) {
          const Tensor rows = from_vector(std::vector<std::int64_t>{2, 0, 0, 1}, {4});
          cached.reorder(rows);
          uncached.reorder(rows);
        }
        const auto rows = static_cast<std::int64_t>(feeds[t].size());
        const Tensor tokens = from_vector(feeds[t], {rows});
        const Tensor a = cached.step(tokens), b = uncached.step(tokens);
        REQUIRE(a.shape() == Shape{rows, 24});
        CHECK(max_abs_diff(a, b) < 1e-12);
      }
    }
  }
}

TEST_CASE("transformer_nmt: beam search finds the same translations with and without the cache") {
  auto config = tiny_config("layernorm");
  config.dtype = DType::Float32;
  Generator generator(11);
  transformer_nmt::TransformerNmt model(config, generator);
  testing::randomise(model, 12);
  const auto options = transformer_nmt::search_options(3, 2);
  const auto source = three_sources();
  const auto fast = transformer_nmt::translate_batch(model, source, options, true);
  const auto slow = transformer_nmt::translate_batch(model, source, options, false);
  REQUIRE(fast.size() == 3);
  for (std::size_t s = 0; s < 3; ++s) {
    REQUIRE(fast[s].size() == 2);
    REQUIRE(slow[s].size() == 2);
    for (std::size_t k = 0; k < 2; ++k) {
      CHECK(fast[s][k].tokens == slow[s][k].tokens);
      CHECK(std::fabs(fast[s][k].score - slow[s][k].score) < 1e-4);
    }
  }
}

TEST_CASE("transformer_nmt: tied embeddings are one table, untied ones three") {
  Generator generator(1);
  auto config = tiny_config();
  transformer_nmt::TransformerNmt tied(config, generator);
  config.tie_embeddings = false;
  transformer_nmt::TransformerNmt untied(config, generator);
  // Untied adds a target embedding and an output projection, V x d each.
  CHECK(parameter_count(untied) - parameter_count(tied) == 2 * 24 * 8);
  const auto tied_state = tied.state_dict(), untied_state = untied.state_dict();
  CHECK(tied_state.count("embedding.weight") == 1);
  CHECK(tied_state.count("output_weight") == 0);
  for (const char* name : {"source_embedding.weight", "target_embedding.weight", "output_weight"})
    CHECK(untied_state.at(name).shape() == Shape{24, 8});
  // The same seed gives the same model; weight matrices are Xavier, biases 0.
  Generator again(1);
  transformer_nmt::TransformerNmt twin(tiny_config(), again);
  for (const auto& [name, value] : twin.state_dict())
    CHECK(max_abs_diff(value, tied.state_dict().at(name)) == 0);
  for (const auto& [name, value] : tied.named_parameters())
    if (name.ends_with("bias")) CHECK(max_abs_diff(value, zeros_like(value)) == 0);
}

TEST_CASE("transformer_nmt: parameter gradients match finite differences, post- and pre-norm") {
  for (const std::string norm : {"layernorm", "rmsnorm", "prmsnorm:0.5", "none"}) {
    for (const bool pre_norm : {false, true}) {
      CAPTURE(norm);
      CAPTURE(pre_norm);
      auto config = tiny_config(norm);
      config.pre_norm = pre_norm;
      config.encoder_layers = config.decoder_layers = 1;
      config.vocabulary_size = 16;
      Generator generator(7);
      transformer_nmt::TransformerNmt model(config, generator);
      testing::randomise(model, 8);
      const auto source = nmt::make_source_batch({{4, 5}, {6}}, Device::cpu());
      const auto target = nmt::make_target_batch({{7, 8}, {9}}, Device::cpu());
      CHECK_PARAMETER_GRADIENTS(model, [&] {
        return model.forward(model.encode(source.ids, source.padding), source.padding,
                             target.input);
      });
    }
  }
}

TEST_CASE("transformer_nmt: check refuses what the model cannot be built with") {
  auto config = tiny_config();
  config.heads = 3;
  CHECK_ERROR(transformer_nmt::check(config), "model size 8", "3 heads");
  config = tiny_config("batchnorm");
  CHECK_ERROR(transformer_nmt::check(config), "batchnorm", "has no place");
  config = tiny_config("weightnorm");
  CHECK_ERROR(transformer_nmt::check(config), "weightnorm");
  config = tiny_config("groupnorm");
  CHECK_ERROR(transformer_nmt::check(config), "groupnorm");
  config = tiny_config();
  config.dropout = 1.0;
  CHECK_ERROR(transformer_nmt::check(config), "dropout");
  config = tiny_config();
  config.precision = "float16";
  CHECK_ERROR(transformer_nmt::check(config), "precision", "float16");
  config.precision = "bfloat16";  // with float64 parameters
  CHECK_ERROR(transformer_nmt::check(config), "bfloat16", "float32 parameters", "float64");
}

TEST_CASE("transformer_nmt: mixed precision computes in bfloat16 within its tolerance of float32") {
  auto config = tiny_config("rmsnorm");
  config.dtype = DType::Float32;
  config.model_size = 32;
  config.feed_forward_size = 64;
  config.pre_norm = true;
  const auto source = three_sources();
  const Tensor target_input =
      from_vector(std::vector<std::int64_t>{2, 5, 6, 7, 2, 8, 9, 0, 2, 10, 0, 0}, {3, 4});
  const Tensor target_output =
      from_vector(std::vector<std::int64_t>{5, 6, 7, 3, 8, 9, 3, 0, 10, 3, 0, 0}, {12});
  struct Run {
    Tensor logits;
    double loss = 0;
    std::vector<Tensor> gradients;
  };
  const auto run = [&](const std::string& precision) {
    config.precision = precision;
    Generator generator(7);
    transformer_nmt::TransformerNmt model(config, generator);  // initialised as for training
    const Tensor memory = model.encode(source.ids, source.padding);
    Run result;
    result.logits = model.forward(memory, source.padding, target_input);
    const Tensor loss = nn::cross_entropy(result.logits.reshape({12, 24}), target_output,
                                          {.ignore_index = text::pad_id});
    loss.backward();
    result.loss = loss.item();
    for (const auto& parameter : model.parameters()) result.gradients.push_back(parameter.grad());
    return result;
  };
  const Run single = run("float32"), mixed = run("bfloat16");
  CHECK(single.logits.dtype() == DType::Float32);
  CHECK(mixed.logits.dtype() == DType::BFloat16);
  // bfloat16 keeps 8 significant bits (a relative rounding of at most 2^-8 each time a value
  // is stored). Through two pre-norm layers each way, the logits stay within 0.05 of float32's
  // (measured: 0.017) and the loss within 0.5% (0.04%). The gradients come back through
  // bfloat16 activations' gradients, and the norms' backward subtracts row means from them:
  // within 10% of float32's in norm (measured: 4.5%).
  CHECK(max_abs_diff(mixed.logits, single.logits) < 0.05);
  CHECK(mixed.loss == doctest::Approx(single.loss).epsilon(0.005));
  for (const Tensor& gradient : mixed.gradients)
    CHECK(gradient.dtype() == DType::Float32);  // the master copies' dtype
  const double difference = testing::compare_as_vectors(mixed.gradients, single.gradients).distance;
  INFO("relative gradient difference " << difference);
  CHECK(difference < 0.1);
}

TEST_CASE("transformer_nmt: in mixed precision the search still scores in float32") {
  auto config = tiny_config("layernorm");
  config.dtype = DType::Float32;
  config.precision = "bfloat16";
  Generator generator(11);
  transformer_nmt::TransformerNmt model(config, generator);
  testing::randomise(model, 12);
  model.eval();
  NoGradGuard no_grad;
  const auto source = three_sources();
  const Tensor memory = model.encode(source.ids, source.padding);
  CHECK(memory.dtype() == DType::BFloat16);
  transformer_nmt::TransformerNmtDecoder cached(model, memory, source.padding);
  transformer_nmt::UncachedDecoder uncached(model, memory, source.padding);
  for (const std::vector<std::int64_t>& feed : {std::vector<std::int64_t>{2, 2, 2}, {5, 9, 13}}) {
    const Tensor tokens = from_vector(feed, {3});
    const Tensor a = cached.step(tokens), b = uncached.step(tokens);
    CHECK(a.dtype() == DType::Float32);
    CHECK(b.dtype() == DType::Float32);
    // The two paths round different intermediate sums to bfloat16.
    CHECK(max_abs_diff(a, b) < 0.1);
  }
  const auto hypotheses =
      transformer_nmt::translate_batch(model, source, transformer_nmt::search_options(3, 1), true);
  REQUIRE(hypotheses.size() == 3);
  for (const auto& list : hypotheses) CHECK(std::isfinite(list.front().score));
}

TEST_CASE("transformer_nmt: the schedule warms up linearly to its peak, then decays as 1/sqrt") {
  CHECK(transformer_nmt::learning_rate_at(1e-3, 100, 0) == doctest::Approx(1e-5));
  CHECK(transformer_nmt::learning_rate_at(1e-3, 100, 49) == doctest::Approx(5e-4));
  CHECK(transformer_nmt::learning_rate_at(1e-3, 100, 99) == doctest::Approx(1e-3));
  CHECK(transformer_nmt::learning_rate_at(1e-3, 100, 399) == doctest::Approx(5e-4));
}

TEST_CASE("transformer_nmt: a tiny model's training loss falls on a fixture corpus") {
  const auto corpus = testing::small_parallel_corpus("transformer_nmt_learns", 200);
  const auto tokenizer =
      text::SubwordTokenizer::train({corpus.source, corpus.target}, {.vocabulary_size = 100});
  const auto dataset =
      text::ParallelDataset::load(corpus.source, corpus.target, tokenizer, {.use_cache = false});
  for (const std::string precision : {"float32", "bfloat16"}) {
    CAPTURE(precision);
    text::TranslationBatches batches(dataset, {.max_tokens = 300, .seed = 1});
    Generator generator(1);
    transformer_nmt::TransformerNmt model({.vocabulary_size = 100,
                                           .model_size = 32,
                                           .feed_forward_size = 64,
                                           .heads = 4,
                                           .encoder_layers = 1,
                                           .decoder_layers = 1,
                                           .dropout = 0.1,
                                           .norm = "rmsnorm",
                                           .precision = precision},
                                          generator);
    optim::Adam adam(model.parameters(), {.beta2 = 0.98, .eps = 1e-9});
    std::vector<double> losses;
    for (std::int64_t step = 0; step < 40; ++step) {
      const auto result = transformer_nmt::train_step(
          model, adam, batches.next(),
          {.learning_rate = transformer_nmt::learning_rate_at(3e-3, 10, step)});
      REQUIRE(std::isfinite(result.loss));
      losses.push_back(result.loss);
    }
    const double first = (losses[0] + losses[1] + losses[2]) / 3;
    const double last = (losses[37] + losses[38] + losses[39]) / 3;
    INFO("first " << first << ", last " << last);
    CHECK(last < 0.8 * first);
  }
}

TEST_CASE("average_model_weights: the mean of training states' model tensors, or a clear refusal") {
  testing::ScratchFolder scratch("transformer_nmt_average");
  std::filesystem::create_directories(scratch.path);
  Generator generator(2);
  auto config = tiny_config();
  config.dtype = DType::Float32;
  transformer_nmt::TransformerNmt a(config, generator), b(config, generator);
  optim::Adam adam_a(a.parameters()), adam_b(b.parameters());
  io::save_training_state(scratch / "a.safetensors", a, adam_a, generator, 1);
  io::save_training_state(scratch / "b.safetensors", b, adam_b, generator, 2);
  const auto mean =
      nmt::average_model_weights({scratch / "a.safetensors", scratch / "b.safetensors"}, "test");
  REQUIRE(mean.size() == a.state_dict().size());
  for (const auto& [name, value] : a.state_dict()) {
    const Tensor expected = div(add(value, b.state_dict().at(name)), 2.0);
    CHECK(max_abs_diff(mean.at(name), expected) < 1e-7);
    CHECK(mean.at(name).dtype() == DType::Float32);
  }
  // A model of another shape, and a file that is not a training state.
  config.model_size = 12;
  transformer_nmt::TransformerNmt wider(config, generator);
  optim::Adam adam_wider(wider.parameters());
  io::save_training_state(scratch / "wider.safetensors", wider, adam_wider, generator, 3);
  CHECK_ERROR(nmt::average_model_weights({scratch / "a.safetensors", scratch / "wider.safetensors"},
                                         "test"),
              "wider.safetensors", "but");
  io::save(a, scratch / "weights.safetensors");
  CHECK_ERROR(nmt::average_model_weights({scratch / "weights.safetensors"}, "test"),
              "holds no model weights");
  CHECK_ERROR(nmt::average_model_weights({}, "test"), "no checkpoints");
}
