// The RNNSearch model of examples/gru_nmt: gradients in float64 for each norm, the step-wise
// decoder against teacher forcing, padding, tied embeddings and Nematus's initialisation.
#include <doctest/doctest.h>

#include <cmath>

#include "gru_nmt/model.h"
#include "module_gradcheck.h"

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

TEST_CASE("RnnSearch refuses impossible sizes") {
  Generator generator(1);
  CHECK_ERROR(gru_nmt::RnnSearch({.vocabulary_size = 3}, generator), "RnnSearch",
              "vocabulary_size must be > 4");
  CHECK_ERROR(gru_nmt::RnnSearch({.hidden_size = 0}, generator), "hidden 0");
}
