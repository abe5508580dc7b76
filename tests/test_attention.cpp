// Attention (nn/attention.h, additive_attention.h, multi_head_attention.h): the masked
// softmax and scaled dot-product attention against values worked out element by element,
// gradients against finite differences, what masks guarantee (exact zeros, no look-ahead,
// padding that changes nothing, no NaN for a query with nothing to attend to), and bad input.

#include <cmath>
#include <string>
#include <vector>

#include "helpers.h"
#include "module_gradcheck.h"

using namespace normgrad;
using testing::all_close;
using testing::int_mask;
using testing::leaf;
using testing::randomise;
using Inputs = std::vector<Tensor>;

namespace {

const TensorOptions f64{.dtype = DType::Float64};

bool all_finite(const Tensor& x) {
  for (double value : x.to_vector<double>())
    if (!std::isfinite(value)) return false;
  return true;
}

// The slots of an AdditiveAttention's parameters, for CHECK_MODULE_GRADIENTS.
testing::ParameterSlots slots_of(nn::AdditiveAttention& attention) {
  testing::ParameterSlots slots;
  if (attention.context_weight_norm) {
    slots.push_back(&attention.context_weight_norm->direction);
    slots.push_back(&attention.context_weight_norm->gain);
    slots.push_back(&attention.query_weight_norm->direction);
    slots.push_back(&attention.query_weight_norm->gain);
  } else {
    slots.push_back(&attention.context_weight);
    slots.push_back(&attention.query_weight);
  }
  slots.push_back(&attention.context_bias);
  slots.push_back(&attention.score_weight);
  testing::add_norm_slots(slots, *attention.context_norm);
  testing::add_norm_slots(slots, *attention.query_norm);
  return slots;
}

testing::ParameterSlots slots_of(nn::MultiHeadAttention& attention) {
  testing::ParameterSlots slots{&attention.in_proj_weight, &attention.out_proj->weight};
  if (attention.in_proj_bias.defined()) slots.push_back(&attention.in_proj_bias);
  if (attention.out_proj->bias.defined()) slots.push_back(&attention.out_proj->bias);
  return slots;
}

// Output and weights as one flat tensor, so one gradient check covers both.
Tensor flat(const nn::AttentionOutput& result) {
  return cat({result.output.reshape({-1}), result.weights.reshape({-1})});
}

}  // namespace

// ---- masked softmax and masks -------------------------------------------------------------------

TEST_CASE("masked_softmax: blocked positions get exactly 0, the rest the softmax of the others") {
  for (const DType dtype : {DType::Float32, DType::Float64}) {
    CAPTURE(dtype);
    const Tensor scores = tensor({{0.5, 3.0, -1.0, 2.0}, {1.0, -2.0, 0.25, 4.0}}, {.dtype = dtype});
    const Tensor blocked = int_mask({{0, 1, 0, 1}, {0, 0, 0, 0}});
    const Tensor weights = nn::functional::masked_softmax(scores, blocked);
    const std::vector<double> w = weights.to_vector<double>();
    CHECK(w[1] == 0.0);
    CHECK(w[3] == 0.0);
    const double tolerance = dtype == DType::Float32 ? 1e-6 : 1e-15;
    const double e0 = std::exp(0.5), e2 = std::exp(-1.0);
    CHECK(w[0] == doctest::Approx(e0 / (e0 + e2)).epsilon(tolerance));
    CHECK(w[2] == doctest::Approx(e2 / (e0 + e2)).epsilon(tolerance));
    // An unblocked row is the plain softmax, and no mask at all is too.
    CHECK(all_close(weights.select(0, 1), softmax(scores, -1).select(0, 1), tolerance, 0));
    CHECK(all_close(nn::functional::masked_softmax(scores), softmax(scores, -1), 0, 0));
  }
}

TEST_CASE("masked_softmax: a fully blocked row gives zero weights and zero gradient, not NaN") {
  for (const DType dtype : {DType::Float32, DType::Float64}) {
    CAPTURE(dtype);
    Generator generator(5);
    const Tensor scores = (randn({3, 4}, generator, {.dtype = dtype}) * 3.0).requires_grad_();
    const Tensor blocked = int_mask({{0, 0, 1, 0}, {1, 1, 1, 1}, {0, 0, 0, 0}});
    const Tensor weights = nn::functional::masked_softmax(scores, blocked);
    CHECK(all_close(weights.select(0, 1), std::vector<double>(4, 0.0), 0, 0));
    CHECK(all_close(weights.sum({1}), std::vector<double>{1.0, 0.0, 1.0}, 1e-6, 0));
    (weights * randn({3, 4}, generator, {.dtype = dtype})).sum().backward();
    REQUIRE(scores.grad().defined());
    CHECK(all_finite(scores.grad()));
    CHECK(all_close(scores.grad().select(0, 1), std::vector<double>(4, 0.0), 0, 0));
    CHECK(scores.grad().to_vector<double>()[2] == 0.0);  // the blocked score of row 0
  }
}

TEST_CASE("masked_softmax: gradients match finite differences, with a broadcast mask") {
  const Tensor blocked = int_mask({{0, 1, 0, 0, 1}, {1, 1, 1, 1, 1}, {0, 0, 0, 0, 0}});
  CHECK_GRADIENTS([&](const Inputs& in) { return nn::functional::masked_softmax(in[0], blocked); },
                  {leaf({3, 5}, 2, 2.0)});
  // [2, 1, 5] over [2, 3, 5]: one padding row per batch entry, shared by three queries.
  const Tensor padding = int_mask({{0, 0, 0, 1, 1}, {0, 0, 0, 0, 0}}).unsqueeze(1);
  CHECK_GRADIENTS([&](const Inputs& in) { return nn::functional::masked_softmax(in[0], padding); },
                  {leaf({2, 3, 5}, 3, 2.0)});
}

TEST_CASE("causal_mask blocks exactly the keys after each query") {
  const Tensor mask = nn::functional::causal_mask(3);
  CHECK(mask.dtype() == DType::Int64);
  CHECK(mask.shape() == Shape{3, 3});
  CHECK(mask.to_vector<double>() == std::vector<double>{0, 1, 1, 0, 0, 1, 0, 0, 0});
  CHECK(nn::functional::causal_mask(0).shape() == Shape{0, 0});
}

TEST_CASE("masked_softmax refuses floating-point and misshapen masks") {
  const Tensor scores = zeros({2, 3}, f64);
  CHECK_ERROR(nn::functional::masked_softmax(scores, zeros({2, 3}, f64)), "masked_softmax", "int64",
              "float64");
  CHECK_ERROR(nn::functional::masked_softmax(scores, zeros({2, 4}, {.dtype = DType::Int64})),
              "masked_softmax", "[2, 4]", "[2, 3]");
  CHECK_ERROR(nn::functional::masked_softmax(zeros({2, 3}, {.dtype = DType::Int64})),
              "masked_softmax", "floating-point");
}

// ---- scaled dot-product attention ---------------------------------------------------------------

TEST_CASE("scaled_dot_product_attention equals softmax(q k^T / sqrt(d)) v element by element") {
  const std::int64_t B = 2, H = 2, Lq = 3, Lk = 4, d = 3, dv = 2;
  const Tensor q = leaf({B, H, Lq, d}, 1), k = leaf({B, H, Lk, d}, 2), v = leaf({B, H, Lk, dv}, 3);
  // Batch entry 1 has its last key padded.
  const Tensor blocked = int_mask({{0, 0, 0, 0}, {0, 0, 0, 1}}).reshape({B, 1, 1, Lk});
  const nn::AttentionOutput result = nn::functional::scaled_dot_product_attention(q, k, v, blocked);
  REQUIRE(result.output.shape() == Shape{B, H, Lq, dv});
  REQUIRE(result.weights.shape() == Shape{B, H, Lq, Lk});
  const auto Q = q.to_vector<double>(), K = k.to_vector<double>(), V = v.to_vector<double>();
  const auto out = result.output.to_vector<double>(), w = result.weights.to_vector<double>();
  for (std::int64_t b = 0; b < B; ++b)
    for (std::int64_t h = 0; h < H; ++h)
      for (std::int64_t i = 0; i < Lq; ++i) {
        const std::int64_t keys = b == 1 ? Lk - 1 : Lk;
        std::vector<double> e(Lk, 0.0);
        double total = 0;
        for (std::int64_t j = 0; j < keys; ++j) {
          double dot = 0;
          for (std::int64_t c = 0; c < d; ++c)
            dot += Q[((b * H + h) * Lq + i) * d + c] * K[((b * H + h) * Lk + j) * d + c];
          e[j] = std::exp(dot / std::sqrt(3.0));
          total += e[j];
        }
        for (std::int64_t j = 0; j < Lk; ++j)
          CHECK(w[((b * H + h) * Lq + i) * Lk + j] == doctest::Approx(e[j] / total).epsilon(1e-13));
        for (std::int64_t c = 0; c < dv; ++c) {
          double expected = 0;
          for (std::int64_t j = 0; j < Lk; ++j)
            expected += e[j] / total * V[((b * H + h) * Lk + j) * dv + c];
          CHECK(out[((b * H + h) * Lq + i) * dv + c] == doctest::Approx(expected).epsilon(1e-13));
        }
      }
}

TEST_CASE("scaled_dot_product_attention: gradients match finite differences, masked and not") {
  const Tensor padding = int_mask({{0, 0, 1, 1}, {0, 0, 0, 0}}).reshape({2, 1, 1, 4});
  const Tensor causal = nn::functional::causal_mask(4);
  for (const Tensor& blocked : {Tensor(), padding, causal}) {
    CHECK_GRADIENTS(
        [&](const Inputs& in) {
          return flat(nn::functional::scaled_dot_product_attention(in[0], in[1], in[2], blocked));
        },
        {leaf({2, 2, 4, 3}, 4), leaf({2, 2, 4, 3}, 5), leaf({2, 2, 4, 2}, 6)});
  }
}

TEST_CASE("scaled_dot_product_attention: a query with every key blocked reads zeros") {
  const Tensor q = leaf({1, 1, 2, 3}, 7), k = leaf({1, 1, 3, 3}, 8), v = leaf({1, 1, 3, 2}, 9);
  const Tensor blocked = int_mask({{0, 1, 0}, {1, 1, 1}});
  const nn::AttentionOutput result = nn::functional::scaled_dot_product_attention(q, k, v, blocked);
  CHECK(all_close(result.output.select(2, 1), std::vector<double>(2, 0.0), 0, 0));
  CHECK(all_close(result.weights.select(2, 1), std::vector<double>(3, 0.0), 0, 0));
  result.output.sum().backward();
  for (const Tensor& x : {q, k, v}) CHECK(all_finite(x.grad()));
  CHECK(all_close(q.grad().select(2, 1), std::vector<double>(3, 0.0), 0, 0));
}

TEST_CASE("scaled_dot_product_attention: dropout acts on the weights, seeded, and p = 1 reads 0") {
  const Tensor q = leaf({2, 2, 3, 4}, 1), k = leaf({2, 2, 5, 4}, 2), v = leaf({2, 2, 5, 3}, 3);
  const auto run = [&](double p, std::uint64_t seed) {
    Generator generator(seed);
    return nn::functional::scaled_dot_product_attention(q, k, v, Tensor(), p, generator);
  };
  const nn::AttentionOutput plain = run(0, 1), dropped = run(0.5, 1), again = run(0.5, 1);
  CHECK(all_close(dropped.weights, plain.weights, 0, 0));  // returned before dropout
  CHECK_FALSE(all_close(dropped.output, plain.output, 1e-3, 0));
  CHECK(all_close(dropped.output, again.output, 0, 0));
  CHECK(all_close(run(1.0, 1).output, std::vector<double>(2 * 2 * 3 * 3, 0.0), 0, 0));
  CHECK_GRADIENTS(
      [&](const Inputs& in) {
        Generator generator(3);  // the same mask at every evaluation
        return nn::functional::scaled_dot_product_attention(in[0], in[1], in[2], Tensor(), 0.5,
                                                            generator)
            .output;
      },
      {q, k, v});
}

TEST_CASE("scaled_dot_product_attention refuses mismatched shapes, dtypes and masks") {
  const Tensor q = zeros({2, 2, 3, 4}, f64), k = zeros({2, 2, 5, 4}, f64);
  const Tensor v = zeros({2, 2, 5, 3}, f64);
  const char* op = "scaled_dot_product_attention";
  CHECK_ERROR(nn::functional::scaled_dot_product_attention(zeros({2, 3, 4}, f64), k, v), op,
              "[batch, heads, length, dim]", "[2, 3, 4]");
  CHECK_ERROR(nn::functional::scaled_dot_product_attention(q, zeros({2, 2, 5, 3}, f64), v), op,
              "same last dim", "[2, 2, 3, 4]", "[2, 2, 5, 3]");
  CHECK_ERROR(nn::functional::scaled_dot_product_attention(q, k, zeros({2, 2, 4, 3}, f64)), op,
              "same length", "[2, 2, 4, 3]");
  CHECK_ERROR(nn::functional::scaled_dot_product_attention(q, zeros({1, 2, 5, 4}, f64), v), op,
              "batch and heads", "[1, 2, 5, 4]");
  CHECK_ERROR(nn::functional::scaled_dot_product_attention(q, k.to(DType::Float32), v), op, "dtype",
              "float32");
  CHECK_ERROR(nn::functional::scaled_dot_product_attention(q, k, v, zeros({2, 1, 1, 5}, f64)), op,
              "int64", "float64");
  CHECK_ERROR(nn::functional::scaled_dot_product_attention(
                  q, k, v, zeros({2, 1, 1, 4}, {.dtype = DType::Int64})),
              op, "[2, 2, 3, 5]", "[2, 1, 1, 4]");
  CHECK_ERROR(nn::functional::scaled_dot_product_attention(q, k, v, Tensor(), 1.5), op, "1.5");
}

// ---- additive attention -------------------------------------------------------------------------

TEST_CASE("AdditiveAttention computes v . tanh(U_c C_j + b + W_s s) element by element") {
  manual_seed(1);
  const std::int64_t B = 2, S = 3, C = 4, Q = 3, A = 5;
  nn::AdditiveAttention attention(C, Q, A, {.dtype = DType::Float64});
  randomise(attention, 2);
  const Tensor context = leaf({B, S, C}, 3), query = leaf({B, Q}, 4);
  const Tensor padding = int_mask({{0, 0, 0}, {0, 0, 1}});
  const nn::AttentionOutput result = attention.forward(context, query, padding);
  REQUIRE(result.output.shape() == Shape{B, C});
  REQUIRE(result.weights.shape() == Shape{B, S});
  const auto Cv = context.to_vector<double>(), s = query.to_vector<double>();
  const auto U = attention.context_weight.to_vector<double>();
  const auto W = attention.query_weight.to_vector<double>();
  const auto bias = attention.context_bias.to_vector<double>();
  const auto v = attention.score_weight.to_vector<double>();
  const auto out = result.output.to_vector<double>(), w = result.weights.to_vector<double>();
  for (std::int64_t b = 0; b < B; ++b) {
    const std::int64_t valid = b == 1 ? S - 1 : S;
    std::vector<double> e(S, 0.0);
    double total = 0;
    for (std::int64_t j = 0; j < valid; ++j) {
      double score = 0;
      for (std::int64_t a = 0; a < A; ++a) {
        double hidden = bias[a];
        for (std::int64_t c = 0; c < C; ++c) hidden += U[a * C + c] * Cv[(b * S + j) * C + c];
        for (std::int64_t q = 0; q < Q; ++q) hidden += W[a * Q + q] * s[b * Q + q];
        score += v[a] * std::tanh(hidden);
      }
      e[j] = std::exp(score);
      total += e[j];
    }
    for (std::int64_t j = 0; j < S; ++j)
      CHECK(w[b * S + j] == doctest::Approx(e[j] / total).epsilon(1e-13));
    for (std::int64_t c = 0; c < C; ++c) {
      double expected = 0;
      for (std::int64_t j = 0; j < S; ++j) expected += e[j] / total * Cv[(b * S + j) * C + c];
      CHECK(out[b * C + c] == doctest::Approx(expected).epsilon(1e-13));
    }
  }
}

TEST_CASE("AdditiveAttention normalises U_c C + b and W_s s separately, each over its features") {
  manual_seed(2);
  nn::AdditiveAttention attention(
      4, 3, 6, {.norm = nn::NormSpec::parse("rmsnorm"), .dtype = DType::Float64});
  randomise(attention, 3);
  const Tensor context = leaf({2, 5, 4}, 5), query = leaf({2, 3}, 6);
  const nn::AttentionOutput result = attention.forward(context, query);
  // The composed reference: RMSNorm written out, x / sqrt(mean(x^2) + 1e-5) * gain.
  const auto rms_norm = [](const Tensor& x, const Tensor& gain) {
    return x / sqrt(mean(square(x), {-1}, true) + 1e-5) * gain;
  };
  const auto& context_gain = dynamic_cast<nn::AffineNorm&>(*attention.context_norm).gain;
  const auto& query_gain = dynamic_cast<nn::AffineNorm&>(*attention.query_norm).gain;
  const Tensor from_context = rms_norm(
      matmul(context, attention.context_weight.t()) + attention.context_bias, context_gain);
  const Tensor from_query = rms_norm(matmul(query, attention.query_weight.t()), query_gain);
  const Tensor scores =
      matmul(tanh(from_context + from_query.unsqueeze(1)), attention.score_weight);  // [2, 5]
  const Tensor weights = softmax(scores, -1);
  CHECK(all_close(result.weights, weights, 1e-13, 1e-15));
  CHECK(all_close(result.output, matmul(weights.unsqueeze(1), context).squeeze(1), 1e-13, 1e-15));
}

TEST_CASE("AdditiveAttention: gradients match finite differences for each norm, with padding") {
  for (const char* norm :
       {"none", "layernorm", "rmsnorm", "prmsnorm:0.5", "l2norm", "batchnorm", "weightnorm"}) {
    CAPTURE(norm);
    manual_seed(3);
    nn::AdditiveAttention attention(3, 2, 4,
                                    {.norm = nn::NormSpec::parse(norm), .dtype = DType::Float64});
    randomise(attention, 4);
    const Tensor padding = int_mask({{0, 0, 0, 0}, {0, 0, 1, 1}});
    testing::ParameterSlots slots = slots_of(attention);
    CHECK_MODULE_GRADIENTS(
        attention, slots,
        [&](const Inputs& in) { return flat(attention.forward(in[0], in[1], padding)); },
        {leaf({2, 4, 3}, 5), leaf({2, 2}, 6)});
    // Several decoder steps at once: query [batch, steps, query_size].
    CHECK_MODULE_GRADIENTS(
        attention, slots,
        [&](const Inputs& in) { return flat(attention.forward(in[0], in[1], padding)); },
        {leaf({2, 4, 3}, 7), leaf({2, 3, 2}, 8)});
  }
}

TEST_CASE("AdditiveAttention: the context is projected once and read at every step") {
  manual_seed(4);
  nn::AdditiveAttention attention(
      4, 3, 5, {.norm = nn::NormSpec::parse("layernorm"), .dtype = DType::Float64});
  randomise(attention, 5);
  const Tensor context = leaf({2, 6, 4}, 1), states = leaf({2, 3, 3}, 2);
  const Tensor padding = int_mask({{0, 0, 0, 0, 0, 1}, {0, 0, 0, 1, 1, 1}});
  const nn::AdditiveAttention::ProjectedContext source =
      attention.project_context(context, padding);
  CHECK(source.projected.shape() == Shape{2, 6, 5});
  const nn::AttentionOutput all_steps = attention.attend(source, states);
  REQUIRE(all_steps.output.shape() == Shape{2, 3, 4});
  REQUIRE(all_steps.weights.shape() == Shape{2, 3, 6});
  for (std::int64_t t = 0; t < 3; ++t) {
    const nn::AttentionOutput step = attention.attend(source, states.select(1, t));
    CHECK(all_close(step.output, all_steps.output.select(1, t), 1e-14, 1e-15));
    CHECK(all_close(step.weights, all_steps.weights.select(1, t), 1e-14, 1e-15));
    const nn::AttentionOutput fresh = attention.forward(context, states.select(1, t), padding);
    CHECK(all_close(step.output, fresh.output, 0, 0));
  }
}

TEST_CASE("AdditiveAttention: padded positions get weight 0 and their values change nothing") {
  manual_seed(5);
  nn::AdditiveAttention attention(
      3, 2, 4, {.norm = nn::NormSpec::parse("rmsnorm"), .dtype = DType::Float64});
  randomise(attention, 6);
  const Tensor context = leaf({2, 4, 3}, 1), query = leaf({2, 2}, 2);
  const Tensor padding = int_mask({{0, 0, 0, 1}, {0, 1, 1, 1}});
  const nn::AttentionOutput result = attention.forward(context, query, padding);
  const auto w = result.weights.to_vector<double>();
  CHECK(w[3] == 0.0);
  CHECK((w[5] == 0.0 && w[6] == 0.0 && w[7] == 0.0));
  CHECK(w[4] == 1.0);  // one real source word takes all the weight
  // New values at the padded positions: the outputs stay bit for bit the same.
  const Tensor is_padding = padding.to(DType::Float64).unsqueeze(-1);
  const Tensor changed = where(is_padding, leaf({2, 4, 3}, 9) * 100.0, context);
  const nn::AttentionOutput again = attention.forward(changed, query, padding);
  CHECK(all_close(again.output, result.output, 0, 0));
  CHECK(all_close(again.weights, result.weights, 0, 0));
}

TEST_CASE("AdditiveAttention: a sentence that is all padding reads a zero context, not NaN") {
  manual_seed(6);
  nn::AdditiveAttention attention(3, 2, 4, {.dtype = DType::Float64});
  const Tensor context = leaf({2, 3, 3}, 1), query = leaf({2, 2}, 2);
  const nn::AttentionOutput result =
      attention.forward(context, query, int_mask({{0, 0, 1}, {1, 1, 1}}));
  CHECK(all_close(result.output.select(0, 1), std::vector<double>(3, 0.0), 0, 0));
  CHECK(all_close(result.weights.select(0, 1), std::vector<double>(3, 0.0), 0, 0));
  (result.output.sum() + result.weights.sum()).backward();
  CHECK(all_finite(context.grad()));
  CHECK(all_finite(query.grad()));
  for (const Tensor& parameter : attention.parameters()) CHECK(all_finite(parameter.grad()));
}

TEST_CASE("AdditiveAttention: parameters, their names, shapes and Nematus's initialisation") {
  manual_seed(7);
  nn::AdditiveAttention plain(6, 4, 6);
  std::vector<std::string> names;
  for (const auto& [name, parameter] : plain.named_parameters()) names.push_back(name);
  CHECK(names ==
        std::vector<std::string>{"context_weight", "query_weight", "context_bias", "score_weight"});
  CHECK(plain.context_weight.shape() == Shape{6, 6});
  CHECK(plain.query_weight.shape() == Shape{6, 4});
  // U_c is square, so orthogonal: U U^T = I. W_s is N(0, 0.01^2), the bias zero.
  CHECK(all_close(matmul(plain.context_weight, plain.context_weight.t()),
                  std::vector<double>{1, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0,
                                      0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 1},
                  1e-5, 1e-5));
  CHECK(abs(plain.query_weight).max().item() < 0.06);
  CHECK(abs(plain.context_bias).max().item() == 0.0);

  nn::AdditiveAttention rms(6, 4, 5, {.norm = nn::NormSpec::parse("rmsnorm")});
  names.clear();
  for (const auto& [name, parameter] : rms.named_parameters()) names.push_back(name);
  CHECK(names == std::vector<std::string>{"context_weight", "query_weight", "context_bias",
                                          "score_weight", "context_norm.gain", "query_norm.gain"});

  nn::AdditiveAttention weight_normed(6, 4, 5, {.norm = nn::NormSpec::parse("weightnorm")});
  names.clear();
  for (const auto& [name, parameter] : weight_normed.named_parameters()) names.push_back(name);
  CHECK(names == std::vector<std::string>{"context_bias", "score_weight",
                                          "context_weight.direction", "context_weight.gain",
                                          "query_weight.direction", "query_weight.gain"});
  CHECK_FALSE(weight_normed.context_weight.defined());
}

TEST_CASE("AdditiveAttention refuses bad sizes, shapes, dtypes and masks") {
  CHECK_ERROR(nn::AdditiveAttention(0, 2, 3), "AdditiveAttention", "positive", "0, 2 and 3");
  CHECK_ERROR(nn::AdditiveAttention(2, 2, 3, {.dtype = DType::Int64}), "AdditiveAttention",
              "int64");
  nn::AdditiveAttention attention(3, 2, 4, {.dtype = DType::Float64});
  const Tensor context = zeros({2, 4, 3}, f64), query = zeros({2, 2}, f64);
  const char* project = "AdditiveAttention::project_context";
  const char* attend = "AdditiveAttention::attend";
  CHECK_ERROR(attention.forward(zeros({2, 4}, f64), query), project, "[batch, source_len, 3]",
              "[2, 4]");
  CHECK_ERROR(attention.forward(zeros({2, 4, 5}, f64), query), project, "[2, 4, 5]");
  CHECK_ERROR(attention.forward(context.to(DType::Float32), query), project, "float32", "float64");
  CHECK_ERROR(attention.forward(context, query, zeros({2, 4}, f64)), project, "padding mask",
              "int64", "float64");
  CHECK_ERROR(attention.forward(context, query, zeros({2, 3}, {.dtype = DType::Int64})), project,
              "padding mask", "[2, 4]", "[2, 3]");
  CHECK_ERROR(attention.forward(context, zeros({3, 2}, f64)), attend, "[2, 2]", "[3, 2]");
  CHECK_ERROR(attention.forward(context, zeros({2, 5}, f64)), attend, "[2, 5]");
  CHECK_ERROR(attention.forward(context, zeros({2, 1, 1, 2}, f64)), attend, "[2, 1, 1, 2]");
  CHECK_ERROR(attention.forward(context, query.to(DType::Float32)), attend, "float32");
  CHECK_ERROR(attention.forward(context.to(DType::BFloat16), query.to(DType::BFloat16)), project,
              "bfloat16", "float64");
  CHECK_ERROR(attention.attend({}, query), attend, "project_context");
  // Mixed precision takes bfloat16 context and queries for float32 parameters, not one of each.
  nn::AdditiveAttention single(3, 2, 4);
  CHECK_ERROR(single.forward(context.to(DType::BFloat16), query.to(DType::Float32)), attend,
              "query is float32", "projected context is bfloat16");
}

// ---- multi-head attention -----------------------------------------------------------------------

TEST_CASE("MultiHeadAttention: torch.nn.MultiheadAttention's parameters and initialisation") {
  manual_seed(8);
  nn::MultiHeadAttention attention(8, 2);
  std::vector<std::string> names;
  for (const auto& [name, parameter] : attention.named_parameters()) names.push_back(name);
  CHECK(names == std::vector<std::string>{"in_proj_weight", "in_proj_bias", "out_proj.weight",
                                          "out_proj.bias"});
  CHECK(attention.in_proj_weight.shape() == Shape{24, 8});
  CHECK(attention.in_proj_bias.shape() == Shape{24});
  CHECK(abs(attention.in_proj_bias).max().item() == 0.0);
  CHECK(abs(attention.out_proj->bias).max().item() == 0.0);
  // Xavier-uniform on [24, 8]: bound sqrt(6 / 32).
  CHECK(abs(attention.in_proj_weight).max().item() <= std::sqrt(6.0 / 32.0));
  CHECK(abs(attention.in_proj_weight).max().item() > 0.3);
  nn::MultiHeadAttention no_bias(8, 4, {.bias = false});
  CHECK(no_bias.named_parameters().size() == 2);
}

TEST_CASE("MultiHeadAttention equals its heads computed one at a time") {
  manual_seed(9);
  const std::int64_t E = 6, H = 3, d = 2;
  nn::MultiHeadAttention attention(E, H, {.dtype = DType::Float64});
  randomise(attention, 1);
  const Tensor query = leaf({2, 3, E}, 1), memory = leaf({2, 4, E}, 2);
  const Tensor padding = int_mask({{0, 0, 0, 1}, {0, 0, 0, 0}});
  const nn::AttentionOutput result =
      attention.forward(query, memory, memory, {.key_padding_mask = padding});
  const Tensor blocked = padding.unsqueeze(1);  // [2, 1, 4] over [2, 3, 4]
  std::vector<Tensor> heads;
  for (std::int64_t h = 0; h < H; ++h) {
    const auto rows = [&](std::int64_t part) {
      return attention.in_proj_weight.narrow(0, part * E + h * d, d);
    };
    const auto bias = [&](std::int64_t part) {
      return attention.in_proj_bias.narrow(0, part * E + h * d, d);
    };
    const Tensor q = matmul(query, rows(0).t()) + bias(0);
    const Tensor k = matmul(memory, rows(1).t()) + bias(1);
    const Tensor v = matmul(memory, rows(2).t()) + bias(2);
    const Tensor weights =
        nn::functional::masked_softmax(matmul(q, k.transpose(1, 2)) / std::sqrt(2.0), blocked);
    CHECK(all_close(result.weights.select(1, h), weights, 1e-13, 1e-15));
    heads.push_back(matmul(weights, v));
  }
  const Tensor expected = attention.out_proj->forward(cat(heads, 2));
  CHECK(all_close(result.output, expected, 1e-13, 1e-15));
}

TEST_CASE("MultiHeadAttention: gradients match finite differences with padding and causal masks") {
  manual_seed(10);
  nn::MultiHeadAttention attention(4, 2, {.dtype = DType::Float64});
  randomise(attention, 2);
  testing::ParameterSlots slots = slots_of(attention);
  const Tensor target_padding = int_mask({{0, 0, 0}, {0, 0, 1}});
  SUBCASE("self-attention, causal and padded") {
    CHECK_MODULE_GRADIENTS(
        attention, slots,
        [&](const Inputs& in) {
          return flat(attention.forward(in[0], in[0], in[0],
                                        {.key_padding_mask = target_padding, .causal = true}));
        },
        {leaf({2, 3, 4}, 1)});
  }
  SUBCASE("cross-attention with separate key and value, padded") {
    const Tensor memory_padding = int_mask({{0, 0, 0, 0, 1}, {0, 0, 1, 1, 1}});
    CHECK_MODULE_GRADIENTS(
        attention, slots,
        [&](const Inputs& in) {
          return flat(attention.forward(in[0], in[1], in[2], {.key_padding_mask = memory_padding}));
        },
        {leaf({2, 3, 4}, 2), leaf({2, 5, 4}, 3), leaf({2, 5, 4}, 4)});
  }
  SUBCASE("no bias, an explicit attention mask") {
    nn::MultiHeadAttention no_bias(4, 2, {.bias = false, .dtype = DType::Float64});
    randomise(no_bias, 3);
    testing::ParameterSlots no_bias_slots = slots_of(no_bias);
    const Tensor pattern = int_mask({{0, 1, 0}, {0, 0, 1}, {1, 0, 0}});
    CHECK_MODULE_GRADIENTS(
        no_bias, no_bias_slots,
        [&](const Inputs& in) {
          return flat(no_bias.forward(in[0], in[1], in[1], {.attention_mask = pattern}));
        },
        {leaf({2, 3, 4}, 5), leaf({2, 3, 4}, 6)});
  }
}

TEST_CASE("MultiHeadAttention: causal attention does not look ahead") {
  manual_seed(11);
  nn::MultiHeadAttention attention(8, 2, {.dtype = DType::Float64});
  randomise(attention, 4);
  Tensor x = leaf({2, 5, 8}, 1).detach();
  const nn::AttentionOutput before = attention.forward(x, x, x, {.causal = true});
  for (std::int64_t t = 1; t < 5; ++t) {
    CAPTURE(t);
    // New values from position t on: the outputs before t stay bit for bit the same.
    Tensor changed = x.clone();
    changed.narrow(1, t, 5 - t)
        .copy_(leaf({2, 5 - t, 8}, 20 + static_cast<std::uint64_t>(t)).detach());
    const nn::AttentionOutput after =
        attention.forward(changed, changed, changed, {.causal = true});
    CHECK(all_close(after.output.narrow(1, 0, t), before.output.narrow(1, 0, t), 0, 0));
    CHECK(all_close(after.weights.narrow(2, 0, t), before.weights.narrow(2, 0, t), 0, 0));
    CHECK_FALSE(all_close(after.output.narrow(1, t, 1), before.output.narrow(1, t, 1), 0, 0));
  }
  // Weights above the diagonal are exactly zero.
  const auto w = before.weights.to_vector<double>();
  for (std::int64_t row = 0; row < 2 * 2; ++row)
    for (std::int64_t i = 0; i < 5; ++i)
      for (std::int64_t j = i + 1; j < 5; ++j) CHECK(w[(row * 5 + i) * 5 + j] == 0.0);
}

TEST_CASE("MultiHeadAttention: padded keys and values change nothing") {
  manual_seed(12);
  nn::MultiHeadAttention attention(6, 3, {.dtype = DType::Float64});
  randomise(attention, 5);
  const Tensor query = leaf({2, 3, 6}, 1).detach(), memory = leaf({2, 5, 6}, 2).detach();
  const Tensor padding = int_mask({{0, 0, 0, 1, 1}, {0, 0, 0, 0, 1}});
  const nn::AttentionOutput before =
      attention.forward(query, memory, memory, {.key_padding_mask = padding});
  const Tensor is_padding = padding.to(DType::Float64).unsqueeze(-1);
  const Tensor changed = where(is_padding, leaf({2, 5, 6}, 3) * 50.0, memory).detach();
  const nn::AttentionOutput after =
      attention.forward(query, changed, changed, {.key_padding_mask = padding});
  CHECK(all_close(after.output, before.output, 0, 0));
  CHECK(all_close(after.weights, before.weights, 0, 0));
  CHECK(all_close(before.weights.narrow(3, 3, 2).select(0, 0), std::vector<double>(18, 0.0), 0, 0));
}

TEST_CASE("MultiHeadAttention: a query with every key blocked gives out_proj's bias, not NaN") {
  manual_seed(13);
  nn::MultiHeadAttention attention(4, 2, {.dtype = DType::Float64});
  randomise(attention, 6);
  const Tensor x = leaf({1, 3, 4}, 1);
  const Tensor pattern = int_mask({{0, 1, 1}, {1, 1, 1}, {0, 0, 0}});
  const nn::AttentionOutput result = attention.forward(x, x, x, {.attention_mask = pattern});
  CHECK(all_close(result.output.select(1, 1).squeeze(0), attention.out_proj->bias, 0, 0));
  CHECK(all_close(result.weights.select(2, 1), std::vector<double>(2 * 3, 0.0), 0, 0));
  result.output.sum().backward();
  CHECK(all_finite(x.grad()));
  for (const Tensor& parameter : attention.parameters()) CHECK(all_finite(parameter.grad()));
}

TEST_CASE("MultiHeadAttention: dropout on the weights in training only, from its generator") {
  manual_seed(14);
  Generator generator(7);
  nn::MultiHeadAttention attention(
      4, 2, {.dropout = 0.5, .dtype = DType::Float64, .generator = &generator});
  randomise(attention, 7);
  const Tensor x = leaf({2, 4, 4}, 1).detach();
  attention.eval();
  const nn::AttentionOutput evaluated = attention.forward(x, x, x);
  attention.train();
  generator.manual_seed(7);
  const nn::AttentionOutput first = attention.forward(x, x, x);
  generator.manual_seed(7);
  const nn::AttentionOutput second = attention.forward(x, x, x);
  CHECK(all_close(first.output, second.output, 0, 0));
  CHECK_FALSE(all_close(first.output, evaluated.output, 1e-3, 0));
  CHECK(all_close(first.weights, evaluated.weights, 0, 0));
}

TEST_CASE("MultiHeadAttention refuses bad sizes, shapes, dtypes and masks") {
  CHECK_ERROR(nn::MultiHeadAttention(6, 4), "MultiHeadAttention", "d_model 6",
              "not divisible by heads 4");
  CHECK_ERROR(nn::MultiHeadAttention(0, 1), "MultiHeadAttention", "positive");
  CHECK_ERROR(nn::MultiHeadAttention(4, 2, {.dropout = -0.1}), "MultiHeadAttention", "-0.1");
  nn::MultiHeadAttention attention(4, 2, {.dtype = DType::Float64});
  const Tensor x = zeros({2, 3, 4}, f64), memory = zeros({2, 5, 4}, f64);
  const char* op = "MultiHeadAttention::forward";
  CHECK_ERROR(attention.forward(zeros({2, 3, 5}, f64), memory, memory), op, "[batch, length, 4]",
              "[2, 3, 5]");
  CHECK_ERROR(attention.forward(zeros({3, 4}, f64), memory, memory), op, "[3, 4]");
  CHECK_ERROR(attention.forward(x, zeros({3, 5, 4}, f64), zeros({3, 5, 4}, f64)), op,
              "same batch size", "[3, 5, 4]");
  CHECK_ERROR(attention.forward(x, memory, zeros({2, 4, 4}, f64)), op, "same length", "[2, 4, 4]");
  CHECK_ERROR(attention.forward(x.to(DType::Float32), memory, memory), op, "float32", "float64");
  CHECK_ERROR(attention.forward(x, memory, memory, {.key_padding_mask = zeros({2, 5}, f64)}), op,
              "key padding mask", "int64");
  CHECK_ERROR(attention.forward(x, memory, memory,
                                {.key_padding_mask = zeros({2, 3}, {.dtype = DType::Int64})}),
              op, "key padding mask", "[2, 5]", "[2, 3]");
  CHECK_ERROR(attention.forward(x, memory, memory,
                                {.attention_mask = zeros({3, 3}, {.dtype = DType::Int64})}),
              op, "attention mask", "[3, 5]", "[3, 3]");
  CHECK_ERROR(attention.forward(x, memory, memory, {.attention_mask = zeros({3, 5}, f64)}), op,
              "attention mask", "int64");
  CHECK_ERROR(attention.forward(x, memory, memory, {.causal = true}), op, "causal", "3 and 5");
}
