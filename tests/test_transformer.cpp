// The Transformer (nn/positional_encoding.h, nn/transformer.h): the positional table against
// its formula, each layer against its sublayers written out, gradients against finite
// differences for post- and pre-norm with RMSNorm, what the masks guarantee through whole
// stacks (no look-ahead, padding that changes nothing), decoding a position at a time with
// cached keys and values against the whole prefix, dropout modes, and bad input.

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

void add_attention_slots(testing::ParameterSlots& slots, nn::MultiHeadAttention& attention) {
  slots.insert(slots.end(), {&attention.in_proj_weight, &attention.in_proj_bias,
                             &attention.out_proj->weight, &attention.out_proj->bias});
}

void add_linear_slots(testing::ParameterSlots& slots, nn::Linear& linear) {
  slots.insert(slots.end(), {&linear.weight, &linear.bias});
}

testing::ParameterSlots slots_of(nn::TransformerEncoderLayer& layer) {
  testing::ParameterSlots slots;
  add_attention_slots(slots, *layer.self_attention);
  add_linear_slots(slots, *layer.linear1);
  add_linear_slots(slots, *layer.linear2);
  testing::add_norm_slots(slots, *layer.norm1);
  testing::add_norm_slots(slots, *layer.norm2);
  return slots;
}

testing::ParameterSlots slots_of(nn::TransformerDecoderLayer& layer) {
  testing::ParameterSlots slots;
  add_attention_slots(slots, *layer.self_attention);
  add_attention_slots(slots, *layer.cross_attention);
  add_linear_slots(slots, *layer.linear1);
  add_linear_slots(slots, *layer.linear2);
  testing::add_norm_slots(slots, *layer.norm1);
  testing::add_norm_slots(slots, *layer.norm2);
  testing::add_norm_slots(slots, *layer.norm3);
  return slots;
}

nn::TransformerLayerOptions options_for(
    const char* norm, nn::NormPlacement placement,
    nn::FeedForwardActivation activation = nn::FeedForwardActivation::ReLU) {
  return {.norm = nn::NormSpec::parse(norm),
          .placement = placement,
          .activation = activation,
          .dropout = 0.0,
          .dtype = DType::Float64};
}

const char* placement_name(nn::NormPlacement placement) {
  return placement == nn::NormPlacement::Post ? "post-norm" : "pre-norm";
}

}  // namespace

// ---- positional encoding ------------------------------------------------------------------------

TEST_CASE("sinusoidal_positional_encoding: sin and cos of pos / 10000^(2i / d)") {
  for (const std::int64_t d : {6, 5}) {
    CAPTURE(d);
    const Tensor table = nn::functional::sinusoidal_positional_encoding(7, d, DType::Float64);
    REQUIRE(table.shape() == Shape{7, d});
    const auto values = table.to_vector<double>();
    for (std::int64_t pos = 0; pos < 7; ++pos)
      for (std::int64_t i = 0; 2 * i < d; ++i) {
        const double angle = static_cast<double>(pos) / std::pow(10000.0, 2.0 * i / d);
        CHECK(values[pos * d + 2 * i] == doctest::Approx(std::sin(angle)).epsilon(1e-15));
        if (2 * i + 1 < d)
          CHECK(values[pos * d + 2 * i + 1] == doctest::Approx(std::cos(angle)).epsilon(1e-15));
      }
  }
  // An offset continues the table; float32 is the float64 table rounded.
  const Tensor long_table = nn::functional::sinusoidal_positional_encoding(9, 4, DType::Float64);
  CHECK(all_close(nn::functional::sinusoidal_positional_encoding(3, 4, DType::Float64, 6),
                  long_table.narrow(0, 6, 3), 0, 0));
  CHECK(all_close(nn::functional::sinusoidal_positional_encoding(9, 4), long_table, 1e-7, 1e-7));
}

TEST_CASE("SinusoidalPositionalEncoding adds the table to each sequence of a batch") {
  nn::SinusoidalPositionalEncoding positions(4, 16, DType::Float64);
  CHECK(positions.named_parameters().empty());
  CHECK(positions.named_buffers().empty());
  const Tensor x = leaf({2, 5, 4}, 1);
  const Tensor table = positions.table().narrow(0, 0, 5);
  CHECK(all_close(positions.forward(x), x + table, 0, 0));
  CHECK(all_close(positions.forward(x, 3), x + positions.table().narrow(0, 3, 5), 0, 0));
  CHECK(all_close(positions.forward(x.select(0, 1)), x.select(0, 1) + table, 0, 0));
  CHECK_GRADIENTS([&](const Inputs& in) { return positions.forward(in[0]); }, {x});
  const char* op = "SinusoidalPositionalEncoding";
  CHECK_ERROR(positions.forward(zeros({2, 5, 3}, f64)), op, "[batch, len, 4]", "[2, 5, 3]");
  CHECK_ERROR(positions.forward(zeros({2, 5, 4})), op, "float32", "float64");
  CHECK_ERROR(positions.forward(x, 12), op, "12 to 16", "16", "max_length");
  CHECK_ERROR(nn::SinusoidalPositionalEncoding(0), op, "positive");
  CHECK_ERROR(nn::functional::sinusoidal_positional_encoding(3, 4, DType::Int64),
              "sinusoidal_positional_encoding", "int64");
}

// ---- layers against their sublayers written out -------------------------------------------------

TEST_CASE("TransformerEncoderLayer: Norm(x + F(x)) post-norm, x + F(Norm(x)) pre-norm") {
  for (const auto placement : {nn::NormPlacement::Post, nn::NormPlacement::Pre}) {
    CAPTURE(placement_name(placement));
    manual_seed(1);
    nn::TransformerEncoderLayer layer(
        6, 2, 10, options_for("rmsnorm", placement, nn::FeedForwardActivation::GELU));
    randomise(layer, 2);
    const Tensor x = leaf({2, 4, 6}, 3);
    const Tensor padding = int_mask({{0, 0, 0, 0}, {0, 0, 1, 1}});
    const auto attend = [&](const Tensor& in) {
      return layer.self_attention->forward(in, in, in, {.key_padding_mask = padding}).output;
    };
    const auto feed_forward = [&](const Tensor& in) {
      return layer.linear2->forward(gelu(layer.linear1->forward(in)));
    };
    Tensor expected;
    if (placement == nn::NormPlacement::Post) {
      const Tensor h = layer.norm1->forward(x + attend(x));
      expected = layer.norm2->forward(h + feed_forward(h));
    } else {
      const Tensor h = x + attend(layer.norm1->forward(x));
      expected = h + feed_forward(layer.norm2->forward(h));
    }
    CHECK(all_close(layer.forward(x, padding), expected, 1e-14, 1e-14));
  }
}

TEST_CASE("TransformerDecoderLayer: self-attention, cross-attention, FFN, each wrapped") {
  for (const auto placement : {nn::NormPlacement::Post, nn::NormPlacement::Pre}) {
    CAPTURE(placement_name(placement));
    manual_seed(2);
    nn::TransformerDecoderLayer layer(4, 2, 8, options_for("layernorm", placement));
    randomise(layer, 3);
    const Tensor target = leaf({2, 3, 4}, 4), memory = leaf({2, 5, 4}, 5);
    const Tensor target_padding = int_mask({{0, 0, 0}, {0, 0, 1}});
    const Tensor memory_padding = int_mask({{0, 0, 0, 1, 1}, {0, 0, 0, 0, 0}});
    const auto self_attend = [&](const Tensor& in) {
      return layer.self_attention
          ->forward(in, in, in, {.key_padding_mask = target_padding, .causal = true})
          .output;
    };
    const auto cross_attend = [&](const Tensor& in) {
      return layer.cross_attention
          ->forward(in, memory, memory, {.key_padding_mask = memory_padding})
          .output;
    };
    const auto feed_forward = [&](const Tensor& in) {
      return layer.linear2->forward(relu(layer.linear1->forward(in)));
    };
    Tensor expected;
    if (placement == nn::NormPlacement::Post) {
      Tensor h = layer.norm1->forward(target + self_attend(target));
      h = layer.norm2->forward(h + cross_attend(h));
      expected = layer.norm3->forward(h + feed_forward(h));
    } else {
      Tensor h = target + self_attend(layer.norm1->forward(target));
      h = h + cross_attend(layer.norm2->forward(h));
      expected = h + feed_forward(layer.norm3->forward(h));
    }
    const Tensor actual = layer.forward(
        target, memory,
        {.target_padding_mask = target_padding, .memory_padding_mask = memory_padding});
    CHECK(all_close(actual, expected, 1e-14, 1e-14));
  }
}

// ---- gradients ----------------------------------------------------------------------------------

TEST_CASE("TransformerEncoderLayer: gradients match finite differences, RMSNorm post and pre") {
  for (const auto placement : {nn::NormPlacement::Post, nn::NormPlacement::Pre}) {
    for (const auto activation :
         {nn::FeedForwardActivation::ReLU, nn::FeedForwardActivation::GELU}) {
      CAPTURE(placement_name(placement));
      CAPTURE(activation == nn::FeedForwardActivation::ReLU ? "relu" : "gelu");
      manual_seed(3);
      nn::TransformerEncoderLayer layer(4, 2, 6, options_for("rmsnorm", placement, activation));
      randomise(layer, 4);
      testing::ParameterSlots slots = slots_of(layer);
      const Tensor padding = int_mask({{0, 0, 0}, {0, 0, 1}});
      CHECK_MODULE_GRADIENTS(layer, slots,
                             [&](const Inputs& in) { return layer.forward(in[0], padding); },
                             {leaf({2, 3, 4}, 5)});
    }
  }
}

TEST_CASE("TransformerDecoderLayer: gradients match finite differences, RMSNorm post and pre") {
  for (const auto placement : {nn::NormPlacement::Post, nn::NormPlacement::Pre}) {
    CAPTURE(placement_name(placement));
    manual_seed(4);
    nn::TransformerDecoderLayer layer(4, 2, 6, options_for("rmsnorm", placement));
    randomise(layer, 5);
    testing::ParameterSlots slots = slots_of(layer);
    const nn::TransformerDecoderMasks masks{
        .target_padding_mask = int_mask({{0, 0, 0}, {0, 0, 1}}),
        .memory_padding_mask = int_mask({{0, 0, 0, 0}, {0, 1, 1, 1}})};
    CHECK_MODULE_GRADIENTS(layer, slots,
                           [&](const Inputs& in) { return layer.forward(in[0], in[1], masks); },
                           {leaf({2, 3, 4}, 6), leaf({2, 4, 4}, 7)});
  }
}

TEST_CASE("TransformerEncoderLayer: gradients with the other normalisers and with none") {
  for (const char* norm : {"layernorm", "prmsnorm:0.5", "l2norm", "batchnorm", "none"}) {
    CAPTURE(norm);
    manual_seed(5);
    nn::TransformerEncoderLayer layer(4, 2, 6, options_for(norm, nn::NormPlacement::Post));
    randomise(layer, 6);
    testing::ParameterSlots slots = slots_of(layer);
    CHECK_MODULE_GRADIENTS(layer, slots, [&](const Inputs& in) { return layer.forward(in[0]); },
                           {leaf({2, 3, 4}, 7)});
  }
}

// ---- what the masks guarantee through the stacks ------------------------------------------------

TEST_CASE("TransformerDecoder: a change at target position t leaves earlier outputs bit-exact") {
  for (const auto placement : {nn::NormPlacement::Post, nn::NormPlacement::Pre}) {
    CAPTURE(placement_name(placement));
    manual_seed(6);
    nn::TransformerDecoder decoder(2, 8, 2, 16, options_for("rmsnorm", placement));
    randomise(decoder, 7);
    const Tensor target = leaf({2, 5, 8}, 1).detach(), memory = leaf({2, 4, 8}, 2).detach();
    const Tensor before = decoder.forward(target, memory);
    for (std::int64_t t = 1; t < 5; ++t) {
      CAPTURE(t);
      Tensor changed = target.clone();
      changed.narrow(1, t, 1).copy_(leaf({2, 1, 8}, 10 + static_cast<std::uint64_t>(t)).detach());
      const Tensor after = decoder.forward(changed, memory);
      CHECK(all_close(after.narrow(1, 0, t), before.narrow(1, 0, t), 0, 0));
      CHECK_FALSE(all_close(after.narrow(1, t, 1), before.narrow(1, t, 1), 1e-6, 0));
    }
    // Without the causal mask, position 0 does see the future.
    Tensor changed = target.clone();
    changed.narrow(1, 4, 1).copy_(leaf({2, 1, 8}, 20).detach());
    const Tensor open_before = decoder.forward(target, memory, {.causal = false});
    const Tensor open_after = decoder.forward(changed, memory, {.causal = false});
    CHECK_FALSE(all_close(open_after.narrow(1, 0, 1), open_before.narrow(1, 0, 1), 1e-6, 0));
  }
}

// Decoding a position at a time (TransformerDecoder::start and step) gives what the whole
// prefix's forward gives at its last position, with the memory padding mask, and the cache
// follows a reordering of its rows as a beam search makes it.
TEST_CASE("TransformerDecoder: cached steps equal the prefix's forward, also after reordering") {
  for (const auto placement : {nn::NormPlacement::Post, nn::NormPlacement::Pre}) {
    CAPTURE(placement_name(placement));
    manual_seed(11);
    nn::TransformerDecoder decoder(2, 8, 2, 16, options_for("rmsnorm", placement));
    randomise(decoder, 12);
    const Tensor target = leaf({3, 5, 8}, 1).detach(), memory = leaf({3, 4, 8}, 2).detach();
    const Tensor padding = int_mask({{0, 0, 0, 1}, {0, 0, 0, 0}, {0, 1, 1, 1}});
    const Tensor full = decoder.forward(target, memory, {.memory_padding_mask = padding});
    nn::TransformerDecoderCache cache = decoder.start(memory, padding);
    CHECK(cache.length() == 0);
    for (std::int64_t t = 0; t < 2; ++t) {
      CAPTURE(t);
      CHECK(all_close(decoder.step(target.narrow(1, t, 1), cache), full.narrow(1, t, 1), 1e-12,
                      1e-12));
    }
    CHECK(cache.length() == 2);
    // Rows repeated and left out: the rest of the steps continue old rows 2, 0, 0 and 1.
    const Tensor rows = tensor({2, 0, 0, 1}, {.dtype = DType::Int64});
    cache.reorder(rows);
    const Tensor reordered =
        decoder.forward(index_select(target, 0, rows), index_select(memory, 0, rows),
                        {.memory_padding_mask = index_select(padding, 0, rows)});
    for (std::int64_t t = 2; t < 5; ++t) {
      CAPTURE(t);
      const Tensor step = decoder.step(index_select(target, 0, rows).narrow(1, t, 1), cache);
      CHECK(all_close(step, reordered.narrow(1, t, 1), 1e-12, 1e-12));
    }
    CHECK(cache.length() == 5);
  }
}

TEST_CASE("TransformerDecoder: cached steps refuse a wrong shape or another decoder's cache") {
  manual_seed(13);
  nn::TransformerDecoder decoder(2, 8, 2, 16, options_for("rmsnorm", nn::NormPlacement::Post));
  nn::TransformerDecoder deeper(3, 8, 2, 16, options_for("rmsnorm", nn::NormPlacement::Post));
  nn::TransformerDecoderCache cache = decoder.start(zeros({2, 4, 8}, f64));
  CHECK_ERROR(decoder.step(zeros({2, 2, 8}, f64), cache), "cached keys and values", "one position",
              "[batch, 1, 8]", "[2, 2, 8]");
  CHECK_ERROR(deeper.step(zeros({2, 1, 8}, f64), cache), "TransformerDecoder::step",
              "the cache has 2 layers, the decoder 3");
  CHECK_ERROR(decoder.step(zeros({3, 1, 8}, f64), cache), "cached keys and values", "[3, 1, 8]",
              "2 rows", "batch size");
  CHECK_ERROR(
      decoder.layers[0]->cross_attention->attend(zeros({2, 1, 8}, f64), nn::KeyValueCache{}),
      "cached keys and values", "the cache is empty");
  CHECK_ERROR(decoder.start(zeros({2, 4, 6}, f64)), "TransformerDecoderLayer::start", "memory",
              "[2, 4, 6]");
}

TEST_CASE("Transformer stacks: padded positions change nothing at the other positions") {
  for (const auto placement : {nn::NormPlacement::Post, nn::NormPlacement::Pre}) {
    CAPTURE(placement_name(placement));
    manual_seed(7);
    const auto options = options_for("rmsnorm", placement);
    nn::TransformerEncoder encoder(2, 8, 4, 12, options);
    nn::TransformerDecoder decoder(2, 8, 4, 12, options);
    randomise(encoder, 8);
    randomise(decoder, 9);
    const Tensor source = leaf({2, 5, 8}, 1).detach(), target = leaf({2, 3, 8}, 2).detach();
    const Tensor source_padding = int_mask({{0, 0, 0, 1, 1}, {0, 0, 0, 0, 1}});
    const Tensor is_padding = source_padding.to(DType::Float64).unsqueeze(-1);
    const Tensor changed = where(is_padding, leaf({2, 5, 8}, 3) * 10.0, source).detach();
    const Tensor memory = encoder.forward(source, source_padding);
    const Tensor changed_memory = encoder.forward(changed, source_padding);
    // Unpadded positions of the encoder's output are the same bit for bit...
    const Tensor keep = 1.0 - is_padding;
    CHECK(all_close(memory * keep, changed_memory * keep, 0, 0));
    // ...and so is everything the decoder reads from them.
    const nn::TransformerDecoderMasks masks{.memory_padding_mask = source_padding};
    CHECK(all_close(decoder.forward(target, memory, masks),
                    decoder.forward(target, changed_memory, masks), 0, 0));
  }
}

// ---- stacks, modes and training -----------------------------------------------------------------

TEST_CASE("Transformer stacks: layer names, a final norm for pre-norm only, modes reach layers") {
  manual_seed(8);
  nn::TransformerEncoder post(2, 8, 2, 16, {.norm = nn::NormSpec::parse("rmsnorm")});
  CHECK(post.layers.size() == 2);
  CHECK_FALSE(post.final_norm);
  std::vector<std::string> names;
  for (const auto& [name, parameter] : post.named_parameters()) names.push_back(name);
  CHECK(names.size() == 2 * 10);
  CHECK(names.front() == "layers.0.self_attention.in_proj_weight");
  CHECK(names.back() == "layers.1.norm2.gain");
  nn::TransformerDecoder pre(3, 8, 2, 16, {.placement = nn::NormPlacement::Pre});
  CHECK(pre.layers.size() == 3);
  REQUIRE(pre.final_norm);
  names.clear();
  for (const auto& [name, parameter] : pre.named_parameters()) names.push_back(name);
  CHECK(names.size() == 3 * 18 + 2);  // LayerNorm (the default) has gain and bias
  CHECK(names[18] == "layers.1.self_attention.in_proj_weight");
  CHECK(names.back() == "final_norm.bias");
  pre.eval();
  CHECK_FALSE(pre.layers[2]->self_attention->is_training());
  pre.train();
  CHECK(pre.layers[2]->cross_attention->is_training());
}

TEST_CASE("Transformer layers: dropout in training only, from the options' generator") {
  manual_seed(9);
  Generator generator(1);
  nn::TransformerEncoderLayer layer(
      8, 2, 16, {.dropout = 0.3, .dtype = DType::Float64, .generator = &generator});
  nn::TransformerEncoderLayer no_dropout(8, 2, 16, {.dropout = 0.0, .dtype = DType::Float64});
  no_dropout.load_state_dict(layer.state_dict());
  const Tensor x = leaf({2, 4, 8}, 1).detach();
  layer.eval();
  CHECK(all_close(layer.forward(x), no_dropout.forward(x), 0, 0));
  layer.train();
  generator.manual_seed(5);
  const Tensor first = layer.forward(x);
  generator.manual_seed(5);
  CHECK(all_close(layer.forward(x), first, 0, 0));
  CHECK_FALSE(all_close(first, no_dropout.forward(x), 1e-3, 0));
}

TEST_CASE("Transformer: an encoder-decoder with RMSNorm fits a small batch under Adam") {
  manual_seed(10);
  const auto options =
      nn::TransformerLayerOptions{.norm = nn::NormSpec::parse("rmsnorm"), .dropout = 0.0};
  nn::TransformerEncoder encoder(1, 16, 4, 32, options);
  nn::TransformerDecoder decoder(1, 16, 4, 32, options);
  nn::SinusoidalPositionalEncoding positions(16);
  const Tensor source = positions.forward(randn({4, 6, 16}));
  const Tensor target_in = positions.forward(randn({4, 5, 16}));
  const Tensor wanted = randn({4, 5, 16});
  std::vector<Tensor> parameters = encoder.parameters();
  for (const Tensor& parameter : decoder.parameters()) parameters.push_back(parameter);
  optim::Adam adam(parameters, {.lr = 3e-3});
  const Tensor padding =
      int_mask({{0, 0, 0, 0, 0, 0}, {0, 0, 0, 0, 1, 1}, {0, 0, 0, 0, 0, 1}, {0, 0, 1, 1, 1, 1}});
  double first = 0, last = 0;
  for (int step = 0; step < 150; ++step) {
    const Tensor memory = encoder.forward(source, padding);
    const Tensor out = decoder.forward(target_in, memory, {.memory_padding_mask = padding});
    const Tensor loss = nn::mse_loss(out, wanted);
    adam.zero_grad();
    loss.backward();
    adam.step();
    (step == 0 ? first : last) = loss.item();
  }
  CAPTURE(first);
  CAPTURE(last);
  CHECK(last < 0.25 * first);
}

// ---- bad input ----------------------------------------------------------------------------------

TEST_CASE("Transformer layers refuse bad sizes, norms, shapes and masks") {
  CHECK_ERROR(nn::TransformerEncoderLayer(6, 4, 8), "TransformerEncoderLayer", "d_model 6",
              "not divisible by heads 4");
  CHECK_ERROR(nn::TransformerDecoderLayer(8, 2, 0), "TransformerDecoderLayer", "positive",
              "8, 2 and 0");
  CHECK_ERROR(nn::TransformerEncoderLayer(8, 2, 8, {.norm = nn::NormSpec::parse("weightnorm")}),
              "TransformerEncoderLayer", "weightnorm", "activation normaliser");
  CHECK_ERROR(nn::TransformerEncoderLayer(8, 2, 8, {.dropout = 2.0}), "TransformerEncoderLayer",
              "dropout", "2");
  CHECK_ERROR(nn::TransformerEncoder(0, 8, 2, 8), "TransformerEncoder", "num_layers", "0");
  CHECK_ERROR(nn::TransformerDecoder(-1, 8, 2, 8), "TransformerDecoder", "num_layers", "-1");

  nn::TransformerEncoderLayer encoder(4, 2, 8, {.dtype = DType::Float64});
  CHECK_ERROR(encoder.forward(zeros({2, 3, 5}, f64)), "TransformerEncoderLayer", "[batch, len, 4]",
              "[2, 3, 5]");
  CHECK_ERROR(encoder.forward(zeros({3, 4}, f64)), "TransformerEncoderLayer", "[3, 4]");
  CHECK_ERROR(encoder.forward(zeros({2, 3, 4}, f64), zeros({2, 4}, {.dtype = DType::Int64})),
              "MultiHeadAttention::forward", "key padding mask", "[2, 3]", "[2, 4]");
  CHECK_ERROR(encoder.forward(zeros({2, 3, 4}, f64), zeros({2, 3}, f64)),
              "MultiHeadAttention::forward", "key padding mask", "int64");

  nn::TransformerDecoderLayer decoder(4, 2, 8, {.dtype = DType::Float64});
  const Tensor target = zeros({2, 3, 4}, f64);
  CHECK_ERROR(decoder.forward(target, zeros({3, 5, 4}, f64)), "TransformerDecoderLayer",
              "same batch size", "[2, 3, 4]", "[3, 5, 4]");
  CHECK_ERROR(decoder.forward(target, zeros({2, 5, 6}, f64)), "TransformerDecoderLayer", "memory",
              "[batch, len, 4]", "[2, 5, 6]");
  CHECK_ERROR(decoder.forward(zeros({2, 3}, f64), zeros({2, 5, 4}, f64)), "TransformerDecoderLayer",
              "target", "[2, 3]");
  CHECK_ERROR(decoder.forward(target, zeros({2, 5, 4}, f64),
                              {.memory_padding_mask = zeros({2, 3}, {.dtype = DType::Int64})}),
              "MultiHeadAttention::forward", "key padding mask", "[2, 5]");
}
